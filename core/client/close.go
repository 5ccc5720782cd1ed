package client

import (
	"context"
	"sync"
)

// Close stops the client's background work and frees its connections:
// every keep-alive ends (its goroutine has exited when Close returns), a
// shard map fetch in flight is cancelled and none starts again, calls in
// flight are cancelled, and the idle connections of the client's
// transport are closed. After Close every call fails with ErrClosed.
//
// Close releases nothing: a lease still held stays held on the server
// until its TTL runs out, and its Lost closes at ValidUntil, since nothing
// renews it any more. Release leases before closing to free them at once.
// Close is idempotent and safe for concurrent use.
func (c *Client) Close() error {
	c.bg.mu.Lock()
	c.bg.close()
	c.bg.mu.Unlock()
	c.bg.wg.Wait()
	c.routes.Close()
	c.http.CloseIdleConnections()
	return nil
}

// background tracks the keep-alives a Client runs on its own, so Close
// can stop them and wait for them (its shard map cache stops its own).
type background struct {
	// closing is done once Close was called; close cancels it, under mu.
	closing context.Context
	close   context.CancelFunc
	// mu orders every wg.Add before Close's wg.Wait: nothing starts once
	// closing is done.
	mu sync.Mutex
	wg sync.WaitGroup
}

// goBackground runs fn in a goroutine Close waits for, unless the client
// is closed, when it reports false and runs nothing.
func (c *Client) goBackground(fn func()) bool {
	c.bg.mu.Lock()
	defer c.bg.mu.Unlock()
	if c.bg.closing.Err() != nil {
		return false
	}
	c.bg.wg.Add(1)
	go func() {
		defer c.bg.wg.Done()
		fn()
	}()
	return true
}

// closedErr is ErrClosed once Close was called, else nil.
func (c *Client) closedErr() error {
	if c.bg.closing.Err() != nil {
		return ErrClosed
	}
	return nil
}

// closable returns ctx, also cancelled by Close; call stop when done.
func (c *Client) closable(ctx context.Context) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(c.bg.closing, cancel)
	return ctx, func() {
		unhook()
		cancel()
	}
}

// ctxErr says why ctx (from closable) ended: ErrClosed when the client
// was closed, else the caller's ctx.Err().
func (c *Client) ctxErr(ctx context.Context) error {
	if err := c.closedErr(); err != nil {
		return err
	}
	return ctx.Err()
}
