package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node/nodetest"
	"github.com/lockstep/lockstep/core/server"
	"github.com/lockstep/lockstep/core/service"
	"github.com/lockstep/lockstep/core/shard"
)

// serveReal serves s on a loopback listener through its own http.Server,
// so the connection-level timeouts are the ones lockd uses.
func serveReal(t *testing.T, s *server.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := s.HTTPServer()
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return ln.Addr().String()
}

// readUntilClosed reads what the server sends until it closes the
// connection; it fails if the server is still holding it open after 10 s.
func readUntilClosed(t *testing.T, conn net.Conn) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(conn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection still open after 10s; got %q so far", b)
	}
	return string(b)
}

// TestSlowBodyIsCutOffAtReadTimeout: goal — a client that announces a body
// and sends only part of it cannot hold a connection (and a goroutine)
// open: past the read timeout the server answers 400 and closes. Method:
// a 200 ms read timeout; over a raw connection send the headers with
// Content-Length: 100 and 20 bytes of body, then read until the server
// closes (failing after 10 s, fifty times the timeout). The same for a
// request whose headers never finish.
func TestSlowBodyIsCutOffAtReadTimeout(t *testing.T) {
	c := nodetest.New(t, 1, nil)
	addr := serveReal(t, front(t, shard.Single(c.Nodes[0]), service.Config{}, server.Config{ReadTimeout: 200 * time.Millisecond}))

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "POST /lock/acquire HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"resource\":\"slow\",")
	got := readUntilClosed(t, conn)
	if !strings.HasPrefix(got, "HTTP/1.1 400") || !strings.Contains(got, `"code":"invalid_argument"`) {
		t.Fatalf("slow body got %q, want 400 invalid_argument then close", got)
	}

	conn2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	_, _ = io.WriteString(conn2, "GET /livez HTTP/1.1\r\nHost: x\r\n")
	readUntilClosed(t, conn2)
}

// TestLongWaitOutlivesReadAndWriteTimeouts: goal — the read timeout and the
// per-request write deadline never cut a blocking acquire short: it may
// wait its whole wait, and a later request on the same keep-alive
// connection does not inherit an expired deadline. Method: read and write
// timeouts of 200 ms and a 300 ms request timeout; a waiter with a 1 s
// wait on a held lock must get its 200 granted=false reply, and so must a
// request sent on the same connection after the waiter's deadline passed.
func TestLongWaitOutlivesReadAndWriteTimeouts(t *testing.T) {
	c := nodetest.New(t, 1, nil)
	addr := serveReal(t, front(t, shard.Single(c.Nodes[0]), service.Config{RequestTimeout: 300 * time.Millisecond}, server.Config{
		ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond,
	}))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	send := func(body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+addr+api.PathAcquire, strings.NewReader(body))
		if err := req.Write(conn); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatalf("reading the reply: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, b := send(`{"resource":"r","client_id":"a","ttl":60000}`); code != 200 || !strings.Contains(b, `"granted":true`) {
		t.Fatalf("holder: %d %s", code, b)
	}
	code, b := send(`{"resource":"r","client_id":"b","ttl":1000,"wait":1000}`)
	var got api.AcquireResponse
	if err := json.Unmarshal([]byte(b), &got); err != nil || code != 200 || got.Granted || got.QueuePosition != 1 {
		t.Fatalf("waiter: %d %s, want 200 granted=false queue_position=1", code, b)
	}
	// Past the waiter's write deadline (request timeout + write timeout after its wait).
	time.Sleep(700 * time.Millisecond)
	if code, b := send(`{"resource":"s","client_id":"a","ttl":1000}`); code != 200 {
		t.Fatalf("next request on the connection: %d %s", code, b)
	}
}

// TestInFlightLimitAnswers503: goal — a bounded number of API requests run
// at once; one more is answered at once with 503 overloaded (its own code,
// not a missing leader's unavailable) and Retry-After (nothing done, safe
// to retry here later or elsewhere) instead of piling up, while the
// probes and /metrics still answer. Method: MaxInFlight 1; park a waiter in
// the queue, then send a second request and the probes.
func TestInFlightLimitAnswers503(t *testing.T) {
	c := nodetest.New(t, 1, nil)
	ts := serveReal(t, front(t, shard.Single(c.Nodes[0]), service.Config{MaxInFlight: 1}, server.Config{}))
	base := "http://" + ts
	code, b := do(t, "POST", base+api.PathAcquire, `{"resource":"r","client_id":"a","ttl":60000}`)
	var held api.AcquireResponse
	if err := json.Unmarshal(b, &held); err != nil || code != 200 || !held.Granted {
		t.Fatalf("holder: %d %s", code, b)
	}
	waiter := make(chan int, 1)
	go func() {
		resp, err := http.Post(base+api.PathAcquire, "application/json",
			strings.NewReader(`{"resource":"r","client_id":"b","ttl":1000,"wait":60000}`))
		if err != nil {
			waiter <- 0
			return
		}
		resp.Body.Close()
		waiter <- resp.StatusCode
	}()
	waitUntil(t, "waiter queued", func() bool { return len(c.Nodes[0].LocalStatus("r").Queue) == 1 })

	req, _ := http.NewRequest("GET", base+api.PathStatus+"?resource=r", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	var e api.Error
	if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != 503 || e.Code != api.CodeOverloaded ||
		!strings.Contains(e.Error, "--max-in-flight") || strings.Contains(e.Error, "leader") || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("request over the limit = %d %s (Retry-After %q), want 503 overloaded naming --max-in-flight with Retry-After: 1",
			resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	for _, path := range []string{api.PathLive, api.PathReady, api.PathHealth, api.PathMetrics} {
		if code, b := do(t, "GET", base+path, ""); code != 200 {
			t.Fatalf("%s while at the limit = %d %s, want 200", path, code, b)
		}
	}
	// Release behind the HTTP limit, which the waiter occupies.
	id, err := lock.ParseLeaseID(held.LeaseID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Nodes[0].Release(context.Background(), "r", id); err != nil {
		t.Fatal(err)
	}
	if code := <-waiter; code != 200 {
		t.Fatalf("the admitted waiter got %d, want 200", code)
	}
}
