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

// TestSharedClientKeepsConnections: goal — one Client shared by many
// goroutines reuses its connections (keep-alive) instead of dialling per
// request. Method: 16 goroutines each make 20 statuses through one client
// with the default transport; the server counts new connections, which
// must stay at most one per goroutine (http.DefaultTransport's 2 idle
// connections per host would need ~14 new ones per round).
func TestSharedClientKeepsConnections(t *testing.T) {
	fs := newFakeServer()
	var dials atomic.Int32
	srv := httptest.NewUnstartedServer(fs)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := newTestClient(t, Config{Endpoints: []string{srv.URL}})
	const callers, calls = 16, 20
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := dials.Load(); n > callers {
		t.Fatalf("%d connections for %d callers making %d requests: keep-alive is not reused", n, callers, callers*calls)
	}
}
