package service

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
)

// watchBuffer is how many entries a shard's reader may run ahead of the
// stream's sender.
const watchBuffer = 64

// shardWatch is one shard's part of a watch.
type shardWatch struct {
	shard int
	w     *node.Watcher
}

// Watch streams the events of in's resource (or prefix) to send: first a
// header with each shard's start index, then one message per log entry, in
// log order per shard. It is served from this member's applied log, so it
// trails the leader on a follower but never skips: events this member no
// longer holds end the watch with a compacted error. It returns when ctx
// ends or EndWatches is called (nil), send fails, or the watch cannot go
// on.
//
// Watches hold no in-flight token (they last): each group bounds its
// watchers instead (node.ErrTooManyWatchers).
func (s *Service) Watch(ctx context.Context, in api.WatchRequest, send func(api.WatchMessage) error) error {
	if err := s.authorizeWatch(ctx, in); err != nil {
		return err
	}
	parts, err := s.openWatch(ctx, in)
	if err != nil {
		return err
	}
	defer func() {
		for _, p := range parts {
			p.w.Close()
		}
	}()
	head := api.WatchMessage{Start: make(map[int]uint64, len(parts))}
	for _, p := range parts {
		head.Start[p.shard] = p.w.Position()
	}
	if err := send(head); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan api.WatchMessage, watchBuffer)
	failed := make(chan error, len(parts))
	var wg sync.WaitGroup
	// Readers stop on cancel; wait for them before their watchers close.
	defer func() {
		cancel()
		wg.Wait()
	}()
	keep := watchFilter(in)
	for _, p := range parts {
		wg.Go(func() {
			if err := readShard(ctx, p, keep, out); err != nil {
				failed <- err
			}
		})
	}
	for {
		select {
		case m := <-out:
			if err := send(m); err != nil {
				return err
			}
		case err := <-failed:
			return err
		case <-ctx.Done():
			return nil
		case <-s.watchesEnd:
			return nil
		}
	}
}

// EndWatches ends every watch of this service, now and later, cleanly:
// the member is stopping, and its watchers resume on another one. Every
// front end calls it when it stops (net/http's Shutdown would wait for a
// watch for ever, and so would gRPC's graceful stop).
func (s *Service) EndWatches() {
	s.endOnce.Do(func() { close(s.watchesEnd) })
}

// openWatch validates in and starts a watcher on each shard it covers.
func (s *Service) openWatch(ctx context.Context, in api.WatchRequest) ([]shardWatch, error) {
	if in.Resource == "" && !in.Prefix {
		return nil, fmt.Errorf("%w: resource is required (or prefix=true to watch by prefix; an empty prefix watches every resource)", lock.ErrInvalid)
	}
	var parts []shardWatch
	if in.Prefix {
		// A prefix spans every shard: placement hashes whole names.
		for i := range s.host.Groups() {
			parts = append(parts, shardWatch{shard: i + 1})
		}
	} else {
		_, sh, err := s.host.For(in.Resource)
		if err != nil {
			return nil, err
		}
		parts = append(parts, shardWatch{shard: int(sh)})
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: this member runs no lock shards yet", node.ErrUnavailable)
	}
	for shard := range in.Start {
		if !containsShard(parts, shard) {
			return nil, fmt.Errorf("%w: start names shard %d, which this watch does not cover", lock.ErrInvalid, shard)
		}
	}
	for i := range parts {
		n, ok := s.host.Group(parts[i].shard)
		var err error
		if ok {
			parts[i].w, err = n.Watch(ctx, in.Start[parts[i].shard])
		} else {
			err = fmt.Errorf("%w: shard %d is not running here", node.ErrUnavailable, parts[i].shard)
		}
		if err != nil {
			for _, p := range parts[:i] {
				p.w.Close()
			}
			return nil, fmt.Errorf("shard %d: %w", parts[i].shard, err)
		}
	}
	return parts, nil
}

func containsShard(parts []shardWatch, shard int) bool {
	for _, p := range parts {
		if p.shard == shard {
			return true
		}
	}
	return false
}

// watchFilter keeps the events of in's resource or prefix.
func watchFilter(in api.WatchRequest) func(lock.Event) bool {
	if in.Prefix {
		return func(ev lock.Event) bool { return strings.HasPrefix(ev.Resource, in.Resource) }
	}
	return func(ev lock.Event) bool { return ev.Resource == in.Resource }
}

// readShard feeds p's entries to out until ctx ends or the watcher fails.
func readShard(ctx context.Context, p shardWatch, keep func(lock.Event) bool, out chan<- api.WatchMessage) error {
	for {
		entries, err := p.w.Next(ctx, keep)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("shard %d: %w", p.shard, err)
		}
		for _, e := range entries {
			m := api.WatchMessage{Shard: p.shard, Index: e.Index, Events: make([]api.WatchEvent, 0, len(e.Events))}
			for _, ev := range e.Events {
				m.Events = append(m.Events, watchEvent(ev))
			}
			select {
			case out <- m:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

func watchEvent(ev lock.Event) api.WatchEvent {
	out := api.WatchEvent{Kind: ev.Kind.String(), Resource: ev.Resource, ClientID: ev.Lease.ClientID,
		LeaseFingerprint: api.LeaseFingerprint(ev.Lease.ID.String()), Mode: api.Mode(ev.Lease.Mode.String()), LogTimeMs: ms(ev.LogTime)}
	switch ev.Kind {
	case lock.EventGrant, lock.EventRelease, lock.EventExpire, lock.EventGrace, lock.EventRevive:
		out.FencingToken = ev.Lease.Token
	}
	return out
}

// authorizeWatch needs the read right on the watched namespace; a prefix
// that stops before the namespace separator may span namespaces, so it
// needs read on every one.
func (s *Service) authorizeWatch(ctx context.Context, in api.WatchRequest) error {
	if in.Prefix && strings.IndexByte(in.Resource, lock.NamespaceSeparator) < 0 {
		return s.authorizeEvery(ctx, acl.RightRead)
	}
	return s.authorize(ctx, acl.RightRead, in.Resource)
}
