package client

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// batchReplies holds requests until n are in flight (or a while has
// passed) and then lets them all answer at once, as a Raft batch commit
// answers the requests it carried.
type batchReplies struct {
	n       int
	mu      sync.Mutex
	waiting int
	release chan struct{}
}

func (b *batchReplies) wait() {
	b.mu.Lock()
	if b.release == nil {
		b.release = make(chan struct{})
	}
	ch := b.release
	b.waiting++
	if b.waiting == b.n {
		close(ch)
		b.release, b.waiting = nil, 0
	}
	b.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(100 * time.Millisecond): // a straggler; not part of the check
	}
}

// TestSharedClientKeepsConnections: goal — one Client shared by many
// goroutines keeps its connections alive when many responses arrive at
// once, instead of closing most and dialling again. Method: 16 goroutines
// each make 20 statuses through one client with the default transport,
// doing 1 ms of their own work between calls, against a server that answers
// them in batches of 16 (like a commit answering a batch); the server
// counts new connections. Reuse needs about
// one per goroutine; with http.DefaultTransport's 2 idle connections per
// host, 14 of every batch's 16 connections are closed and dialled again.
func TestSharedClientKeepsConnections(t *testing.T) {
	const callers, calls = 16, 20
	fs := newFakeServer()
	batch := &batchReplies{n: callers}
	var dials atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		batch.wait()
		fs.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := newTestClient(t, Config{Endpoints: []string{srv.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for g := range callers {
		wg.Go(func() {
			for i := range calls {
				if _, err := c.Status(ctx, fmt.Sprintf("r-%d-%d", g, i)); err != nil {
					errs <- err
					return
				}
				time.Sleep(time.Millisecond) // the caller's own work, e.g. holding the lock
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := dials.Load(); n > 3*callers {
		t.Fatalf("%d connections for %d callers making %d requests: keep-alive connections are not reused", n, callers, callers*calls)
	}
}
