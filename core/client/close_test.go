package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Goal: Close ends the client's background work — the keep-alive renews
// no more, a shard map fetch in flight is cancelled — and every later call
// fails with ErrClosed, while the lease is left to lapse (Lost at
// ValidUntil), not released. Method: a synctest bubble (its end fails the
// test on a goroutine left behind) with shard routing on and a map fetch
// that hangs until cancelled; acquire with keep-alive, let it renew, Close,
// then count renews and map fetches over a minute of bubble time.
func TestCloseStopsKeepAliveAndMapFetches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeServer()
		fs.setFault(func(path string, _ int) fault {
			if path == api.PathCluster {
				return fault{delay: time.Hour} // ends only when the client cancels
			}
			return fault{}
		})
		c, err := New(Config{Endpoints: []string{"http://fake.invalid"}, HTTPClient: &http.Client{Transport: handlerTransport{fs}}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		l, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: 10 * time.Second, KeepAlive: true})
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		// One renew, at 5s; the map fetch it started (no map yet) hangs for
		// its 1s timeout, so one is in flight at Close.
		time.Sleep(5500 * time.Millisecond)
		synctest.Wait()
		renews, fetches := fs.callCount(api.PathRenew), fs.callCount(api.PathCluster)
		if renews != 1 || fetches == 0 {
			t.Fatalf("before Close: %d renews, %d map fetches; want 1 and some", renews, fetches)
		}
		closed := time.Now()
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if waited := time.Since(closed); waited != 0 {
			t.Errorf("Close waited %v of bubble time: a fetch or keep-alive was not cancelled", waited)
		}
		if _, err := c.Acquire(context.Background(), "s", AcquireOptions{TTL: time.Second}); !errors.Is(err, ErrClosed) {
			t.Errorf("Acquire after Close = %v, want ErrClosed", err)
		}
		if _, err := c.Status(context.Background(), "r"); !errors.Is(err, ErrClosed) {
			t.Errorf("Status after Close = %v, want ErrClosed", err)
		}
		if err := l.Release(context.Background()); !errors.Is(err, ErrClosed) {
			t.Errorf("Release after Close = %v, want ErrClosed", err)
		}
		if at := waitLost(t, l, start); at != 5*time.Second+9*time.Second {
			t.Errorf("lease lost at %v, want at ValidUntil (last renew 5s + 9s)", at)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := fs.callCount(api.PathRenew); got != renews {
			t.Errorf("%d renews after Close", got-renews)
		}
		if got := fs.callCount(api.PathCluster); got != fetches {
			t.Errorf("%d map fetches after Close", got-fetches)
		}
		if err := c.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}

// Goal: Close cancels a call in flight, which returns ErrClosed (and the
// server drops the cancelled acquire from its queue). Method: in a
// synctest bubble, an acquire waits an hour in the queue behind another
// holder; Close; the acquire must have returned before any bubble time
// passed.
func TestCloseCancelsCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeServer()
		c := newInProcessClient(t, fs, Config{})
		if _, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: time.Hour}); err != nil {
			t.Fatalf("first Acquire: %v", err)
		}
		result := make(chan error, 1)
		go func() {
			_, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: time.Hour, Wait: time.Hour})
			result <- err
		}()
		<-fs.queued
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		synctest.Wait()
		select {
		case err := <-result:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("waiting Acquire = %v, want ErrClosed", err)
			}
		default:
			t.Fatal("waiting Acquire still blocked after Close")
		}
		if got := <-fs.dequeued; got != "r" {
			t.Errorf("server dequeued %q", got)
		}
	})
}

// Goal: Close closes the client's idle keep-alive connections. Method: a
// real loopback server that reports connection states; one call leaves
// its connection idle; after Close the server must see it closed (within
// a generous deadline: this waits on a condition, it measures nothing).
func TestCloseClosesIdleConnections(t *testing.T) {
	fs := newFakeServer()
	srv := httptest.NewUnstartedServer(fs)
	closedConns := make(chan struct{}, 16)
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateClosed {
			closedConns <- struct{}{}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := newTestClient(t, Config{Endpoints: []string{srv.URL}})
	if _, err := c.Status(context.Background(), "r"); err != nil {
		t.Fatalf("Status: %v", err)
	}
	select {
	case <-closedConns:
		t.Fatal("connection closed before Close")
	default:
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-closedConns:
	case <-time.After(10 * time.Second):
		t.Fatal("idle connection still open 10s after Close")
	}
}
