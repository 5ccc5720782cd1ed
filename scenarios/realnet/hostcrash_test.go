package realnet

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

// serveUpstream serves a member stand-in on addr: /wait blocks until the
// server is closed, anything else answers 204.
func serveUpstream(t *testing.T, addr string) *http.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }()
	return srv
}

// TestHostCrashFront: goal — with host crashes, a call that was at the
// member when it died, or that is sent while it is down, gets no answer
// (no reset, no error reply) until its caller gives up, even after the
// member is back, as in the simulator; a call sent after the restart
// reaches the new process. Method: a member stand-in behind the front,
// "crashed" (host down, server closed) during a waiting call and
// restarted on the same address.
func TestHostCrashFront(t *testing.T) {
	addr, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	upstream := serveUpstream(t, addr)
	c := &Cluster{}
	m := &member{id: "n1", httpAddr: addr}
	if err := c.openFront(m); err != nil {
		t.Fatal(err)
	}
	defer m.closeFront()
	client := &http.Client{Transport: &http.Transport{}}
	get := func(ctx context.Context, path string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.apiAddr()+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := get(context.Background(), "/ok"); err != nil || code != http.StatusNoContent {
		t.Fatalf("before the crash: %d %v", code, err)
	}

	waiting := make(chan error, 1)
	waitCtx, cancelWait := context.WithCancel(context.Background())
	defer cancelWait()
	go func() { _, err := get(waitCtx, "/wait"); waiting <- err }()
	time.Sleep(100 * time.Millisecond) // the call reaches the member
	m.hostDown(true)
	_ = upstream.Close()
	downCtx, cancelDown := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelDown()
	if code, err := get(downCtx, "/ok"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call sent while the host is down was answered: %d %v", code, err)
	}
	upstream = serveUpstream(t, addr)
	defer upstream.Close()
	m.hostDown(false)
	if code, err := get(context.Background(), "/ok"); err != nil || code != http.StatusNoContent {
		t.Fatalf("after the restart: %d %v", code, err)
	}
	select {
	case err := <-waiting:
		t.Fatalf("the call in flight at the crash ended before its caller gave up: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	cancelWait()
	if err := <-waiting; !errors.Is(err, context.Canceled) {
		t.Fatalf("the held call ended with %v, want the caller's cancel", err)
	}
	if n := m.heldRequests(); n != 2 {
		t.Fatalf("front held %d requests, want 2", n)
	}
}
