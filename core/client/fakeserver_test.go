package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// fault is what the fake server does to one call instead of (or besides)
// answering normally.
type fault struct {
	delay  time.Duration // wait before handling (honours client cancellation)
	status int           // answer this error status without applying
	code   api.Code      // error code sent with status
	drop   bool          // apply, then abort the connection without a reply
}

// faultFunc picks the fault for the n-th call (from 0) to path.
type faultFunc func(path string, n int) fault

// fakeServer is an in-memory lockstep node for client tests: leases with
// TTLs, a FIFO wait queue, acquire dedupe by (client_id, request_id), and
// per-call failure injection. Expired holders are purged lazily on access.
type fakeServer struct {
	mu        sync.Mutex
	locks     map[string]*fakeLock
	requests  map[requestKey]*fakeRequest
	nextToken uint64
	grants    int
	calls     map[string]int
	acquires  []api.AcquireRequest // every acquire body received, faulted or not
	renewedAt []time.Time          // when each successful renew was applied
	fault     faultFunc
	// queued receives the resource of every request that joins a queue;
	// dequeued that of every queued request dropped because its client
	// disconnected. Both are buffered and never block the server.
	queued   chan string
	dequeued chan string
}

type requestKey struct{ clientID, requestID string }

type fakeLock struct {
	holders map[string]*fakeHolder // by lease id
	queue   []*fakeRequest
}

type fakeHolder struct {
	clientID string
	mode     api.Mode
	token    uint64
	ttl      time.Duration
	expires  time.Time
}

type fakeRequest struct {
	req     api.AcquireRequest
	done    chan struct{} // closed when settled
	settled bool
	resp    api.AcquireResponse
}

// fakeEventBuffer bounds the queued/dequeued notification channels.
const fakeEventBuffer = 64

func newFakeServer() *fakeServer {
	return &fakeServer{
		locks:    map[string]*fakeLock{},
		requests: map[requestKey]*fakeRequest{},
		calls:    map[string]int{},
		queued:   make(chan string, fakeEventBuffer),
		dequeued: make(chan string, fakeEventBuffer),
	}
}

// setFault installs f for subsequent calls.
func (s *fakeServer) setFault(f faultFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

func (s *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	s.mu.Lock()
	n := s.calls[r.URL.Path]
	s.calls[r.URL.Path]++
	if r.URL.Path == api.PathAcquire {
		var req api.AcquireRequest
		if json.Unmarshal(body, &req) == nil {
			s.acquires = append(s.acquires, req)
		}
	}
	faults := s.fault
	s.mu.Unlock()

	var f fault
	if faults != nil {
		f = faults(r.URL.Path, n)
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
	}
	if f.status != 0 {
		writeJSON(w, f.status, api.Error{Error: "injected", Code: f.code})
		return
	}
	status, reply := s.handle(r, body)
	if r.Context().Err() != nil {
		return
	}
	if f.drop {
		panic(http.ErrAbortHandler)
	}
	writeJSON(w, status, reply)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func errReply(code api.Code, msg string) (int, any) {
	return code.HTTPStatus(), api.Error{Error: msg, Code: code}
}

// handle applies one request and returns the status and body to send.
func (s *fakeServer) handle(r *http.Request, body []byte) (int, any) {
	switch r.URL.Path {
	case api.PathAcquire:
		var req api.AcquireRequest
		if err := json.Unmarshal(body, &req); err != nil || req.Resource == "" || req.TTLMs <= 0 {
			return errReply(api.CodeInvalidArgument, "bad acquire")
		}
		return s.acquire(r.Context(), req)
	case api.PathRelease:
		var req api.ReleaseRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return errReply(api.CodeInvalidArgument, "bad release")
		}
		return s.release(req)
	case api.PathRenew:
		var req api.RenewRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return errReply(api.CodeInvalidArgument, "bad renew")
		}
		return s.renew(req)
	case api.PathStatus:
		return http.StatusOK, s.status(r.URL.Query().Get("resource"))
	case api.PathCluster:
		return http.StatusOK, api.ClusterResponse{
			Leader: "n1",
			Nodes:  []api.Node{{ID: "n1", HTTPAddr: "127.0.0.1:7070", State: "Leader"}},
		}
	default:
		return errReply(api.CodeNotFound, "no such path")
	}
}

func (s *fakeServer) acquire(ctx context.Context, req api.AcquireRequest) (int, any) {
	s.mu.Lock()
	key := requestKey{req.ClientID, req.RequestID}
	fr, dup := s.requests[key]
	if !dup {
		fr = &fakeRequest{req: req, done: make(chan struct{})}
		if req.RequestID != "" {
			s.requests[key] = fr
		}
		lock := s.lockLocked(req.Resource)
		switch {
		case grantable(lock, req.Mode, true):
			s.grantLocked(lock, fr)
		case req.WaitMs == 0:
			s.settleLocked(fr, api.AcquireResponse{Granted: false})
		default:
			lock.queue = append(lock.queue, fr)
			notify(s.queued, req.Resource)
		}
	}
	s.mu.Unlock()

	// A retry of a queued request waits with its own (remaining) wait.
	select {
	case <-fr.done:
	case <-time.After(time.Duration(req.WaitMs) * time.Millisecond):
	case <-ctx.Done():
		s.mu.Lock()
		if !fr.settled && s.unqueueLocked(fr) >= 0 {
			delete(s.requests, key)
			notify(s.dequeued, req.Resource)
		}
		s.mu.Unlock()
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !fr.settled {
		pos := s.unqueueLocked(fr) + 1
		s.settleLocked(fr, api.AcquireResponse{Granted: false, QueuePosition: pos})
	}
	return http.StatusOK, fr.resp
}

// notify sends resource on ch unless its buffer is full.
func notify(ch chan<- string, resource string) {
	select {
	case ch <- resource:
	default:
	}
}

// lockLocked returns the lock of resource with expired holders purged and
// the queue promoted.
func (s *fakeServer) lockLocked(resource string) *fakeLock {
	lock, ok := s.locks[resource]
	if !ok {
		lock = &fakeLock{holders: map[string]*fakeHolder{}}
		s.locks[resource] = lock
	}
	now := time.Now()
	for id, h := range lock.holders {
		if !now.Before(h.expires) {
			delete(lock.holders, id)
		}
	}
	s.promoteLocked(lock)
	return lock
}

// grantable tells whether a request in mode may hold lock now; fresh
// requests must not overtake the queue.
func grantable(lock *fakeLock, mode api.Mode, fresh bool) bool {
	if fresh && len(lock.queue) > 0 {
		return false
	}
	if len(lock.holders) == 0 {
		return true
	}
	if mode != api.Shared {
		return false
	}
	for _, h := range lock.holders {
		if h.mode != api.Shared {
			return false
		}
	}
	return true
}

func (s *fakeServer) promoteLocked(lock *fakeLock) {
	for len(lock.queue) > 0 && grantable(lock, lock.queue[0].req.Mode, false) {
		head := lock.queue[0]
		lock.queue = lock.queue[1:]
		s.grantLocked(lock, head)
	}
}

func (s *fakeServer) grantLocked(lock *fakeLock, fr *fakeRequest) {
	s.nextToken++
	s.grants++
	mode := fr.req.Mode
	if mode == "" {
		mode = api.Exclusive
	}
	ttl := time.Duration(fr.req.TTLMs) * time.Millisecond
	id := fmt.Sprintf("lease-%d", s.nextToken)
	lock.holders[id] = &fakeHolder{clientID: fr.req.ClientID, mode: mode, token: s.nextToken, ttl: ttl, expires: time.Now().Add(ttl)}
	s.settleLocked(fr, api.AcquireResponse{Granted: true, LeaseID: id, FencingToken: s.nextToken, ExpiresInMs: fr.req.TTLMs, Mode: mode})
}

func (s *fakeServer) settleLocked(fr *fakeRequest, resp api.AcquireResponse) {
	fr.resp = resp
	fr.settled = true
	close(fr.done)
}

// unqueueLocked removes fr from its queue and returns its former index, or
// -1 if it was not queued.
func (s *fakeServer) unqueueLocked(fr *fakeRequest) int {
	lock := s.locks[fr.req.Resource]
	i := slices.Index(lock.queue, fr)
	if i >= 0 {
		lock.queue = slices.Delete(lock.queue, i, i+1)
	}
	return i
}

func (s *fakeServer) release(req api.ReleaseRequest) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lock := s.lockLocked(req.Resource)
	if _, ok := lock.holders[req.LeaseID]; !ok {
		return errReply(api.CodeNotHolder, "no such lease")
	}
	delete(lock.holders, req.LeaseID)
	s.promoteLocked(lock)
	return http.StatusOK, api.ReleaseResponse{Released: true}
}

func (s *fakeServer) renew(req api.RenewRequest) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.lockLocked(req.Resource).holders[req.LeaseID]
	if !ok {
		return errReply(api.CodeNotHolder, "no such lease")
	}
	if req.TTLMs > 0 {
		h.ttl = time.Duration(req.TTLMs) * time.Millisecond
	}
	now := time.Now()
	h.expires = now.Add(h.ttl)
	s.renewedAt = append(s.renewedAt, now)
	return http.StatusOK, api.RenewResponse{ExpiresInMs: h.ttl.Milliseconds(), FencingToken: h.token}
}

func (s *fakeServer) status(resource string) api.StatusResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	lock := s.lockLocked(resource)
	out := api.StatusResponse{Resource: resource, Holders: []api.Holder{}, Queue: []api.Waiter{}}
	now := time.Now()
	for id, h := range lock.holders {
		out.Holders = append(out.Holders, api.Holder{
			ClientID: h.clientID, LeaseFingerprint: api.LeaseFingerprint(id), Mode: h.mode, FencingToken: h.token,
			ExpiresInMs: h.expires.Sub(now).Milliseconds(),
		})
	}
	for _, w := range lock.queue {
		out.Queue = append(out.Queue, api.Waiter{ClientID: w.req.ClientID, Mode: w.req.Mode})
	}
	return out
}

// revoke deletes a lease as if it had expired on the server.
func (s *fakeServer) revoke(resource, leaseID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lockLocked(resource).holders, leaseID)
}

// callCount returns how many calls to path arrived.
func (s *fakeServer) callCount(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path]
}

// grantCount returns how many leases were granted.
func (s *fakeServer) grantCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grants
}

// acquireBodies returns a copy of every acquire body received.
func (s *fakeServer) acquireBodies() []api.AcquireRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.acquires)
}

// renewOffsets returns when each renew was applied, relative to start.
func (s *fakeServer) renewOffsets(start time.Time) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]time.Duration, 0, len(s.renewedAt))
	for _, at := range s.renewedAt {
		out = append(out, at.Sub(start))
	}
	return out
}

// handlerTransport serves requests with an in-process handler, so tests in
// a synctest bubble involve no real network (whose blocking would stop the
// fake clock). A handler aborting with http.ErrAbortHandler looks like a
// connection reset to the client.
type handlerTransport struct{ h http.Handler }

var errConnReset = errors.New("in-process transport: connection reset")

func (t handlerTransport) RoundTrip(req *http.Request) (resp *http.Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			if r != http.ErrAbortHandler {
				panic(r)
			}
			resp, err = nil, errConnReset
		}
	}()
	if req.Body == nil {
		req.Body = http.NoBody // a server-side request always has a body
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	return rec.Result(), nil
}

// fastRetries keeps retry delays negligible in tests over the real network.
func fastRetries(cfg Config) Config {
	cfg.BackoffBase = time.Millisecond
	cfg.BackoffMax = 2 * time.Millisecond
	return cfg
}

// startFake serves a new fake server over loopback HTTP.
func startFake(t *testing.T) (*fakeServer, *httptest.Server) {
	t.Helper()
	fs := newFakeServer()
	srv := httptest.NewServer(fs)
	t.Cleanup(srv.Close)
	return fs, srv
}

// newTestClient builds a client for cfg and fails the test on error. The
// fake serves no shard map, and a background map fetch would outlive
// synctest bubbles, so these clients do not route by shard (routing_test.go
// covers that).
func newTestClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	cfg.DisableShardRouting = true
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// newInProcessClient builds a client that reaches fs without a network.
func newInProcessClient(t *testing.T, fs *fakeServer, cfg Config) *Client {
	t.Helper()
	cfg.Endpoints = []string{"http://fake.invalid"}
	cfg.HTTPClient = &http.Client{Transport: handlerTransport{fs}}
	return newTestClient(t, cfg)
}

// fakeClock is a manually advanced clock for Config.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
