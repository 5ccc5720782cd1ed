package node

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/codec"
	"github.com/lockstep/lockstep/core/lock"
)

// fakeFuture is an ApplyFuture the test resolves.
type fakeFuture struct {
	done chan struct{}
	err  error
	resp any
}

func (f *fakeFuture) Error() error     { <-f.done; return f.err }
func (f *fakeFuture) Response() any    { return f.resp }
func (f *fakeFuture) Index() uint64    { return 0 }
func (f *fakeFuture) resolve(resp any) { f.resp = resp; close(f.done) }
func (f *fakeFuture) fail(err error)   { f.err = err; close(f.done) }

// entryLog records the entries that reached raft.
type entryLog struct {
	mu      sync.Mutex
	entries []codec.Entry
	futures []*fakeFuture
}

func (l *entryLog) Apply(data []byte, _ time.Duration) raft.ApplyFuture {
	e, err := codec.DecodeEntry(data)
	if err != nil {
		panic(err)
	}
	f := &fakeFuture{done: make(chan struct{})}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
	l.futures = append(l.futures, f)
	return f
}

// sent lists the clients of each entry's commands, in order.
func (l *entryLog) sent() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]string
	for _, e := range l.entries {
		var names []string
		for i := range e.Commands {
			cmd, _ := e.Command(i)
			names = append(names, cmd.ClientID)
		}
		out = append(out, names)
	}
	return out
}

// answer resolves entry i with a result per command naming its client.
func (l *entryLog) answer(i int) {
	l.mu.Lock()
	e, f := l.entries[i], l.futures[i]
	l.mu.Unlock()
	out := make([]applied, len(e.Commands))
	for j := range e.Commands {
		cmd, _ := e.Command(j)
		out[j] = applied{res: lock.Result{Lease: lock.Lease{ClientID: cmd.ClientID}, LogTime: cmd.Mono}}
	}
	f.resolve(out)
}

func encoded(client string) []byte {
	return codec.AppendCommand(nil, &lock.Command{Op: lock.OpStatus, Resource: "r", ClientID: client})
}

func sameEntries(got, want [][]string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if len(got[i]) != len(want[i]) {
			return false
		}
		for j := range got[i] {
			if got[i][j] != want[i][j] {
				return false
			}
		}
	}
	return true
}

// TestProposerBatches: goal — with depth d, a command goes to raft at once,
// alone, while fewer than d entries are in flight; commands arriving while
// d are in flight queue and go together, in arrival order, as one entry as
// soon as one resolves; each caller gets its own command's result, and the
// entry carries the leader's stamp. Method: a fake raft whose entries the
// test resolves; virtual time to wait for the proposer to settle.
func TestProposerBatches(t *testing.T) {
	for _, depth := range []int{1, 2} {
		synctest.Test(t, func(t *testing.T) {
			log := &entryLog{}
			stop := make(chan struct{})
			p := newProposer(log, depth, func() codec.Stamp { return codec.Stamp{Mono: 77} }, time.Second, stop)
			results := make(map[string]proposed)
			var mu sync.Mutex
			var wg sync.WaitGroup
			submit := func(names ...string) {
				for _, n := range names {
					wg.Go(func() {
						out := p.submit(context.Background(), encoded(n))
						mu.Lock()
						results[n] = out
						mu.Unlock()
					})
					synctest.Wait() // in this order
				}
			}
			expect := func(want ...[]string) {
				t.Helper()
				synctest.Wait()
				if got := log.sent(); !sameEntries(got, want) {
					t.Fatalf("depth %d: entries %v, want %v", depth, got, want)
				}
			}
			submit("a")
			expect([]string{"a"})
			submit("b", "c", "d")
			if depth == 1 {
				expect([]string{"a"})
				log.answer(0)
				expect([]string{"a"}, []string{"b", "c", "d"})
				log.answer(1)
			} else {
				expect([]string{"a"}, []string{"b"})
				log.answer(0)
				expect([]string{"a"}, []string{"b"}, []string{"c", "d"})
				log.answer(1)
				log.answer(2)
			}
			wg.Wait()
			for _, n := range []string{"a", "b", "c", "d"} {
				out := results[n]
				if out.err != nil || out.ap.res.Lease.ClientID != n || out.ap.res.LogTime != 77 {
					t.Errorf("depth %d: %s got %+v", depth, n, out)
				}
			}
			close(stop)
			<-p.finished
		})
	}
}

// TestProposerRaftRefusal: goal — when raft refuses or loses an entry,
// every command in it gets the same classified error (not leader: retry
// elsewhere; enqueue timeout: surely not applied; lost leadership:
// outcome unknown), and a command whose caller's deadline passed while it
// queued is answered unavailable without reaching raft.
func TestProposerRaftRefusal(t *testing.T) {
	cases := []struct {
		raftErr error
		want    error
	}{
		{raft.ErrNotLeader, ErrNotLeader},
		{raft.ErrEnqueueTimeout, ErrUnavailable},
		{raft.ErrLeadershipLost, ErrIndeterminate},
	}
	for _, tc := range cases {
		synctest.Test(t, func(t *testing.T) {
			log := &entryLog{}
			stop := make(chan struct{})
			p := newProposer(log, 1, func() codec.Stamp { return codec.Stamp{} }, time.Second, stop)
			errs := make(chan error, 4)
			go func() { errs <- p.submit(context.Background(), encoded("a")).err }()
			synctest.Wait()
			expired, cancel := context.WithCancel(context.Background())
			for _, n := range []string{"b", "c"} {
				go func() { errs <- p.submit(context.Background(), encoded(n)).err }()
			}
			go func() { errs <- p.submit(expired, encoded("late")).err }()
			synctest.Wait()
			cancel()
			log.futures[0].fail(tc.raftErr)
			synctest.Wait()
			log.futures[1].fail(tc.raftErr)
			var unavailable int
			for range 4 {
				err := <-errs
				switch {
				case errors.Is(err, ErrUnavailable) && errors.Is(err, context.Canceled):
					unavailable++
				case errors.Is(err, tc.want):
				default:
					t.Errorf("raft %v: got %v, want %v", tc.raftErr, err, tc.want)
				}
			}
			if unavailable != 1 || len(log.sent()) != 2 || len(log.sent()[1]) != 2 {
				t.Errorf("raft %v: %d expired answers, entries %v; want 1 and [a] [b c]", tc.raftErr, unavailable, log.sent())
			}
			close(stop)
			<-p.finished
		})
	}
}

// TestProposerShutdown: goal — once the node stops, queued commands are
// answered ErrShutdown without reaching raft, new ones at once, and the
// proposer reports finished only after every entry already in raft
// resolved (raft must not be shut down under one).
func TestProposerShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &entryLog{}
		stop := make(chan struct{})
		p := newProposer(log, 1, func() codec.Stamp { return codec.Stamp{} }, time.Second, stop)
		errs := make(chan error, 3)
		for _, n := range []string{"a", "b"} {
			go func() { errs <- p.submit(context.Background(), encoded(n)).err }()
			synctest.Wait()
		}
		close(stop)
		synctest.Wait()
		if err := <-errs; !errors.Is(err, ErrShutdown) {
			t.Fatalf("queued command: %v, want ErrShutdown", err)
		}
		if err := p.submit(context.Background(), encoded("c")).err; !errors.Is(err, ErrShutdown) {
			t.Fatalf("command after stop: %v, want ErrShutdown", err)
		}
		select {
		case <-p.finished:
			t.Fatal("finished with an entry still in raft")
		default:
		}
		log.answer(0)
		<-p.finished
		if err := <-errs; err != nil {
			t.Fatalf("in-flight command: %v", err)
		}
		if got := log.sent(); len(got) != 1 {
			t.Fatalf("entries %v, want only [a]", got)
		}
	})
}
