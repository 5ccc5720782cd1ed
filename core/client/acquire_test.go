package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// deadEndpoint returns the URL of a closed loopback server: connections
// to it are refused.
func deadEndpoint(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

// Goal: retries rotate past dead endpoints and later calls start at the
// live one. Method: dead endpoints in various positions before a live fake.
func TestAcquireRotatesPastDeadEndpoints(t *testing.T) {
	tests := []struct {
		name      string
		deadFirst int
	}{
		{"one dead", 1},
		{"two dead", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, srv := startFake(t)
			var endpoints []string
			for range tt.deadFirst {
				endpoints = append(endpoints, deadEndpoint(t))
			}
			endpoints = append(endpoints, srv.URL)
			c := newTestClient(t, fastRetries(Config{Endpoints: endpoints, MaxAttempts: tt.deadFirst + 1}))

			l, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: time.Minute})
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			if l.ID() == "" || l.Token() == 0 {
				t.Fatalf("lease without id/token: %q %d", l.ID(), l.Token())
			}
			// With one attempt left, a call that did not start at the live
			// endpoint would fail.
			c.maxAttempts = 1
			if _, err := c.Status(context.Background(), "r"); err != nil {
				t.Fatalf("Status after rotation: %v", err)
			}
			if got := fs.callCount(api.PathAcquire); got != 1 {
				t.Errorf("live endpoint saw %d acquires, want 1", got)
			}
		})
	}
}

// Goal: 503 and 5xx are retried with the same client and request id until
// success or MaxAttempts; 4xx are not retried and surface as *APIError.
// Method: fake server failing the first calls with each status.
func TestAcquireRetryByStatus(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		code      api.Code
		failCalls int
		wantCalls int
		wantErr   bool
	}{
		{"503 then success", 503, api.CodeUnavailable, 2, 3, false},
		{"500 then success", 500, api.CodeInternal, 1, 2, false},
		{"503 exhausts attempts", 503, api.CodeUnavailable, 99, 4, true},
		{"400 not retried", 400, api.CodeInvalidArgument, 99, 1, true},
		{"404 not retried", 404, api.CodeNotFound, 99, 1, true},
		{"409 not retried", 409, api.CodeNotHolder, 99, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, srv := startFake(t)
			fs.setFault(func(path string, n int) fault {
				if path == api.PathAcquire && n < tt.failCalls {
					return fault{status: tt.status, code: tt.code}
				}
				return fault{}
			})
			c := newTestClient(t, fastRetries(Config{Endpoints: []string{srv.URL}, MaxAttempts: 4}))
			_, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: time.Minute})
			if got := fs.callCount(api.PathAcquire); got != tt.wantCalls {
				t.Errorf("server saw %d calls, want %d", got, tt.wantCalls)
			}
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Acquire: %v", err)
				}
			} else {
				var apiErr *APIError
				if !errors.As(err, &apiErr) || apiErr.Status != tt.status || apiErr.Code != tt.code {
					t.Fatalf("Acquire error = %v, want *APIError %d %s", err, tt.status, tt.code)
				}
			}
			bodies := fs.acquireBodies()
			for _, b := range bodies[1:] {
				if b.RequestID != bodies[0].RequestID || b.ClientID != bodies[0].ClientID {
					t.Fatalf("retry changed ids: %+v vs %+v", b, bodies[0])
				}
			}
			if len(bodies[0].RequestID) != 32 {
				t.Errorf("generated request id %q is not 128-bit hex", bodies[0].RequestID)
			}
		})
	}
}

// Goal: a grant whose reply is lost, followed by a retry, yields exactly
// one grant — the server's dedupe proves the retry reuses (client_id,
// request_id). Method: fake drops the first acquire reply after applying;
// a fresh request id would find the lock taken and not be granted.
func TestAcquireLostReplyRetryYieldsSingleGrant(t *testing.T) {
	for _, requestID := range []string{"", "caller-chosen-id"} {
		fs, srv := startFake(t)
		fs.setFault(func(path string, n int) fault {
			return fault{drop: path == api.PathAcquire && n == 0}
		})
		c := newTestClient(t, fastRetries(Config{Endpoints: []string{srv.URL}}))
		l, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: time.Minute, RequestID: requestID})
		if err != nil {
			t.Fatalf("Acquire (request id %q): %v", requestID, err)
		}
		if got := fs.grantCount(); got != 1 {
			t.Fatalf("server granted %d times, want 1", got)
		}
		if got := fs.callCount(api.PathAcquire); got != 2 {
			t.Fatalf("server saw %d acquires, want 2 (dropped + retry)", got)
		}
		st, err := c.Status(context.Background(), "r")
		if err != nil {
			t.Fatalf("Status: %v", err)
		}
		if len(st.Holders) != 1 || st.Holders[0].LeaseFingerprint != api.LeaseFingerprint(l.ID()) || st.Holders[0].ClientID != c.ID() {
			t.Fatalf("holders %+v, want only lease %s of %s", st.Holders, l.ID(), c.ID())
		}
		if requestID != "" && fs.acquireBodies()[1].RequestID != WireRequestID(requestID, "r") {
			t.Errorf("caller's request id not sent (bound to the resource)")
		}
	}
}

// Goal: a busy lock yields *NotGrantedError matching ErrNotGranted, with
// the queue position of a blocking request that timed out. Method: a
// second client try-locks and waits on a held lock (fake clock in synctest).
func TestAcquireNotGranted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeServer()
		holder := newInProcessClient(t, fs, Config{})
		other := newInProcessClient(t, fs, Config{})
		ctx := context.Background()
		if _, err := holder.Acquire(ctx, "r", AcquireOptions{TTL: time.Hour}); err != nil {
			t.Fatalf("holder Acquire: %v", err)
		}
		tests := []struct {
			wait    time.Duration
			wantPos int
		}{{0, 0}, {2 * time.Second, 1}}
		for _, tt := range tests {
			start := time.Now()
			_, err := other.Acquire(ctx, "r", AcquireOptions{TTL: time.Minute, Wait: tt.wait})
			var ng *NotGrantedError
			if !errors.Is(err, ErrNotGranted) || !errors.As(err, &ng) {
				t.Fatalf("wait %v: error %v, want NotGrantedError", tt.wait, err)
			}
			if ng.QueuePosition != tt.wantPos || ng.Resource != "r" {
				t.Errorf("wait %v: %+v, want position %d", tt.wait, ng, tt.wantPos)
			}
			if took := time.Since(start); took != tt.wait {
				t.Errorf("wait %v: returned after %v", tt.wait, took)
			}
		}
	})
}

// Goal: a retry of a blocking acquire carries only the wait that remains.
// Method: the first attempt is slow then fails with 503 (fake clock).
func TestAcquireRetrySendsRemainingWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeServer()
		fs.setFault(func(path string, n int) fault {
			if path == api.PathAcquire && n == 0 {
				return fault{delay: 3 * time.Second, status: 503, code: api.CodeUnavailable}
			}
			return fault{}
		})
		backoffMax := 100 * time.Millisecond
		c := newInProcessClient(t, fs, Config{BackoffBase: backoffMax, BackoffMax: backoffMax})
		if _, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: time.Minute, Wait: 10 * time.Second}); err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		bodies := fs.acquireBodies()
		if len(bodies) != 2 {
			t.Fatalf("%d acquire calls, want 2", len(bodies))
		}
		first, retry := bodies[0].WaitMs, bodies[1].WaitMs
		if first != 10_000 || retry > 7_000 || retry < 7_000-backoffMax.Milliseconds() {
			t.Errorf("waits sent %dms then %dms, want 10000 then about 7000", first, retry)
		}
	})
}

// Goal: cancelling ctx during a blocking acquire aborts the HTTP request
// and the server sees it (dequeues the waiter). Method: real loopback
// server, lock held by another client, cancel once the request is queued.
func TestAcquireCancelAbortsBlockingRequest(t *testing.T) {
	fs, srv := startFake(t)
	c := newTestClient(t, fastRetries(Config{Endpoints: []string{srv.URL}}))
	if _, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: time.Hour}); err != nil {
		t.Fatalf("first Acquire: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Acquire(ctx, "r", AcquireOptions{TTL: time.Minute, Wait: time.Hour})
		errc <- err
	}()
	const bound = 10 * time.Second // generous bound on a shared machine; normally milliseconds
	select {
	case <-fs.queued:
	case <-time.After(bound):
		t.Fatal("request never queued")
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire error = %v, want context.Canceled", err)
		}
	case <-time.After(bound):
		t.Fatal("Acquire did not return after cancel")
	}
	select {
	case <-fs.dequeued:
	case <-time.After(bound):
		t.Fatal("server never saw the cancellation")
	}
	if got := fs.callCount(api.PathAcquire); got != 2 {
		t.Errorf("server saw %d acquires, want 2 (no retry after cancel)", got)
	}
	st, err := c.Status(context.Background(), "r")
	if err != nil || len(st.Queue) != 0 {
		t.Fatalf("Status = %+v, %v; want empty queue", st, err)
	}
}

// Goal: invalid options fail locally without contacting the server.
// Method: table of bad options against a fake that counts calls.
func TestAcquireValidatesOptions(t *testing.T) {
	fs, srv := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{srv.URL}})
	tests := []struct {
		name     string
		resource string
		opts     AcquireOptions
	}{
		{"empty resource", "", AcquireOptions{TTL: time.Second}},
		{"zero ttl", "r", AcquireOptions{}},
		{"sub-ms ttl", "r", AcquireOptions{TTL: time.Microsecond}},
		{"negative wait", "r", AcquireOptions{TTL: time.Second, Wait: -1}},
		{"bad mode", "r", AcquireOptions{TTL: time.Second, Mode: "both"}},
		{"bad policy", "r", AcquireOptions{TTL: time.Second, Policy: "lifo"}},
	}
	for _, tt := range tests {
		if _, err := c.Acquire(context.Background(), tt.resource, tt.opts); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
	if got := fs.callCount(api.PathAcquire); got != 0 {
		t.Errorf("server saw %d acquires, want 0", got)
	}
}

// Goal: a shared grant reports its mode and options reach the server.
// Method: acquire shared with a policy and inspect lease and request body.
func TestAcquireSharedMode(t *testing.T) {
	fs, srv := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{srv.URL}})
	l, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: 1500 * time.Millisecond, Mode: api.Shared, Policy: api.Throughput})
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if l.Mode() != api.Shared || l.Resource() != "r" {
		t.Errorf("lease mode %q resource %q", l.Mode(), l.Resource())
	}
	b := fs.acquireBodies()[0]
	if b.TTLMs != 1500 || b.Mode != api.Shared || b.Policy != api.Throughput || b.WaitMs != 0 {
		t.Errorf("request body %+v", b)
	}
}

// Goal: a node that never answers costs one attempt bounded by the acquire
// wait plus AttemptTimeout, then the call moves to the next endpoint.
// Method: two in-process fakes routed by host, the first hanging (fake clock).
func TestAcquireSlowEndpointTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow, fast := newFakeServer(), newFakeServer()
		slow.setFault(func(string, int) fault { return fault{delay: time.Hour} })
		router := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Host == "slow" {
				slow.ServeHTTP(w, r)
				return
			}
			fast.ServeHTTP(w, r)
		})
		c := newTestClient(t, Config{
			Endpoints:      []string{"http://slow", "http://fast"},
			HTTPClient:     &http.Client{Transport: handlerTransport{router}},
			AttemptTimeout: time.Second,
			BackoffBase:    time.Millisecond,
			BackoffMax:     time.Millisecond,
		})
		start := time.Now()
		if _, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: time.Minute, Wait: 2 * time.Second}); err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if took := time.Since(start); took < 3*time.Second || took > 3*time.Second+time.Millisecond {
			t.Errorf("Acquire took %v, want 2s wait + 1s attempt timeout (+ backoff)", took)
		}
		if slow.callCount(api.PathAcquire) != 1 || fast.grantCount() != 1 {
			t.Errorf("slow saw %d calls, fast granted %d", slow.callCount(api.PathAcquire), fast.grantCount())
		}
	})
}
