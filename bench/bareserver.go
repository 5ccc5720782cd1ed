package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Bare server bounds: a full queue or key table answers 503 rather than grow.
const (
	bareMaxWaitersPerKey = 100_000
	bareMaxKeys          = 1_000_000
	bareMaxBodyBytes     = 64 << 10
)

// BareServer is the "bare HTTP" baseline: the lockstep API (acquire,
// release, cluster) over one mutex and in-memory FIFO queues, with no
// replication and no log. Whatever lockstep costs beyond it is consensus and
// state-machine overhead. Its policies mirror lockstep's: a fifo request
// that must wait joins the key's queue and is handed the lock in order; a
// throughput request never queues but parks as a racer, and all racers
// retry when the lock frees, competing with fresh requests.
type BareServer struct {
	ln    net.Listener
	srv   *http.Server
	start time.Time

	mu        sync.Mutex
	keys      map[string]*bareKey
	nextToken uint64
	nextLease uint64
	closed    bool
}

// bareKey is one resource: its holders, its FIFO queue of waiters and its
// parked throughput racers.
type bareKey struct {
	holders   map[string]*bareHolder
	exclusive int // holders in exclusive mode
	queue     []*bareWaiter
	racers    map[*bareRacer]struct{}
}

type bareHolder struct {
	mode  api.Mode
	timer *time.Timer // fires at lease expiry
}

// bareWaiter is a parked acquire; the granter sends exactly one reply on ch
// (capacity 1, so granting never blocks while holding the mutex).
type bareWaiter struct {
	mode api.Mode
	ttl  time.Duration
	ch   chan api.AcquireResponse
}

// bareRacer is a parked throughput request; wake (capacity 1) is poked
// whenever the lock may have become free.
type bareRacer struct {
	wake chan struct{}
}

// NewBareServer starts a bare server on 127.0.0.1 with a kernel-chosen port.
func NewBareServer() (*BareServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bare server: listen: %w", err)
	}
	s := &BareServer{ln: ln, start: time.Now(), keys: make(map[string]*bareKey)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+api.PathAcquire, s.handleAcquire)
	mux.HandleFunc("POST "+api.PathRelease, s.handleRelease)
	mux.HandleFunc("GET "+api.PathCluster, s.handleCluster)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("bare server stopped", "err", err)
		}
	}()
	return s, nil
}

// URL is the server's base URL.
func (s *BareServer) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server and every lease timer.
func (s *BareServer) Close() error {
	s.mu.Lock()
	s.closed = true
	for _, k := range s.keys {
		for _, h := range k.holders {
			h.timer.Stop()
		}
	}
	s.mu.Unlock()
	return s.srv.Close()
}

// Waiting reports how many requests wait on key, queued or racing.
func (s *BareServer) Waiting(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.keys[key]; k != nil {
		return len(k.queue) + len(k.racers)
	}
	return 0
}

func (s *BareServer) handleAcquire(w http.ResponseWriter, r *http.Request) {
	var req api.AcquireRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Mode == "" {
		req.Mode = api.Exclusive
	}
	if req.Policy == "" {
		req.Policy = api.FIFO
	}
	switch {
	case req.Resource == "" || req.ClientID == "":
		writeAPIError(w, api.CodeInvalidArgument, "resource and client_id are required")
		return
	case req.TTLMs <= 0 || req.WaitMs < 0:
		writeAPIError(w, api.CodeInvalidArgument, "ttl must be > 0 and wait >= 0")
		return
	case req.Mode != api.Exclusive && req.Mode != api.Shared:
		writeAPIError(w, api.CodeInvalidArgument, "mode must be exclusive or shared")
		return
	case req.Policy != api.FIFO && req.Policy != api.Throughput:
		writeAPIError(w, api.CodeInvalidArgument, "policy must be fifo or throughput")
		return
	}
	ttl := time.Duration(req.TTLMs) * time.Millisecond

	s.mu.Lock()
	k, ok := s.keyLocked(req.Resource)
	if !ok {
		s.mu.Unlock()
		writeAPIError(w, api.CodeUnavailable, "key table full or server closed")
		return
	}
	if k.grantable(req.Mode) {
		resp := s.grantLocked(req.Resource, k, req.Mode, ttl)
		s.mu.Unlock()
		writeJSON(w, resp)
		return
	}
	if req.WaitMs == 0 || len(k.queue)+len(k.racers) >= bareMaxWaitersPerKey {
		resp := api.AcquireResponse{LogTimeMs: s.logTimeMs()}
		s.dropIfIdleLocked(req.Resource, k)
		s.mu.Unlock()
		if req.WaitMs == 0 {
			writeJSON(w, resp)
		} else {
			writeAPIError(w, api.CodeUnavailable, "queue full")
		}
		return
	}
	wait := time.Duration(req.WaitMs) * time.Millisecond
	if req.Policy == api.Throughput {
		s.race(r.Context(), w, req.Resource, k, req.Mode, ttl, wait)
		return
	}
	waiter := &bareWaiter{mode: req.Mode, ttl: ttl, ch: make(chan api.AcquireResponse, 1)}
	k.queue = append(k.queue, waiter)
	s.mu.Unlock()

	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case resp := <-waiter.ch:
		writeJSON(w, resp)
	case <-timer.C:
		s.giveUp(r.Context(), w, req.Resource, waiter)
	case <-r.Context().Done():
		s.giveUp(r.Context(), w, req.Resource, waiter)
	}
}

// race parks a throughput request until a wake finds the lock grantable or
// the wait runs out. Called with s.mu held; returns with it released.
func (s *BareServer) race(ctx context.Context, w http.ResponseWriter, resource string, k *bareKey, mode api.Mode, ttl, wait time.Duration) {
	racer := &bareRacer{wake: make(chan struct{}, 1)}
	k.racers[racer] = struct{}{}
	s.mu.Unlock()

	timer := time.NewTimer(wait)
	defer timer.Stop()
	for { // bounded by the wait timer
		select {
		case <-racer.wake:
			s.mu.Lock()
			if k.grantable(mode) {
				delete(k.racers, racer)
				resp := s.grantLocked(resource, k, mode, ttl)
				s.mu.Unlock()
				writeJSON(w, resp)
				return
			}
			s.mu.Unlock()
		case <-timer.C:
			s.withdrawRacer(resource, k, racer)
			writeJSON(w, api.AcquireResponse{LogTimeMs: s.logTimeMs()})
			return
		case <-ctx.Done():
			s.withdrawRacer(resource, k, racer)
			return
		}
	}
}

func (s *BareServer) withdrawRacer(resource string, k *bareKey, racer *bareRacer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(k.racers, racer)
	s.dropIfIdleLocked(resource, k)
}

// giveUp withdraws a waiter whose wait ran out. If it was granted in the
// meantime the grant stands (the reply is already in its channel), unless
// the client has gone, in which case the lease is released at once.
func (s *BareServer) giveUp(ctx context.Context, w http.ResponseWriter, resource string, waiter *bareWaiter) {
	s.mu.Lock()
	k := s.keys[resource]
	pos := -1
	if k != nil {
		for i, q := range k.queue {
			if q == waiter {
				pos = i
				break
			}
		}
	}
	if pos >= 0 {
		k.queue = append(k.queue[:pos], k.queue[pos+1:]...)
		// The head leaving may unblock compatible waiters behind it.
		s.settleLocked(resource, k)
		resp := api.AcquireResponse{QueuePosition: pos + 1, LogTimeMs: s.logTimeMs()}
		s.mu.Unlock()
		writeJSON(w, resp)
		return
	}
	s.mu.Unlock()
	resp := <-waiter.ch
	if ctx.Err() != nil {
		s.release(resource, resp.LeaseID)
		return
	}
	writeJSON(w, resp)
}

func (s *BareServer) handleRelease(w http.ResponseWriter, r *http.Request) {
	var req api.ReleaseRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Resource == "" || req.LeaseID == "" {
		writeAPIError(w, api.CodeInvalidArgument, "resource and lease_id are required")
		return
	}
	if !s.release(req.Resource, req.LeaseID) {
		writeAPIError(w, api.CodeNotHolder, "no such lease on this resource")
		return
	}
	writeJSON(w, api.ReleaseResponse{Released: true, LogTimeMs: s.logTimeMs()})
}

func (s *BareServer) handleCluster(w http.ResponseWriter, _ *http.Request) {
	addr := s.ln.Addr().String()
	writeJSON(w, api.ClusterResponse{
		Leader: "bare",
		Nodes:  []api.Node{{ID: "bare", HTTPAddr: addr, State: "leader"}},
	})
}

// release drops a lease and hands the key on; false if there was no such lease.
func (s *BareServer) release(resource, leaseID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keys[resource]
	if k == nil {
		return false
	}
	h := k.holders[leaseID]
	if h == nil {
		return false
	}
	h.timer.Stop()
	s.dropHolderLocked(resource, k, leaseID, h)
	return true
}

// expire is a lease timer firing: same as a release if still held.
func (s *BareServer) expire(resource, leaseID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.keys[resource]; k != nil {
		if h := k.holders[leaseID]; h != nil {
			s.dropHolderLocked(resource, k, leaseID, h)
		}
	}
}

func (s *BareServer) dropHolderLocked(resource string, k *bareKey, leaseID string, h *bareHolder) {
	delete(k.holders, leaseID)
	if h.mode == api.Exclusive {
		k.exclusive--
	}
	s.settleLocked(resource, k)
}

// settleLocked runs after holders or waiters left: hand the lock to queue
// heads, wake racers if nobody is queued, and forget an idle key.
func (s *BareServer) settleLocked(resource string, k *bareKey) {
	s.promoteLocked(resource, k)
	if len(k.queue) == 0 {
		for racer := range k.racers {
			select {
			case racer.wake <- struct{}{}:
			default: // already poked
			}
		}
	}
	s.dropIfIdleLocked(resource, k)
}

// promoteLocked grants queue heads for as long as they fit the holders.
func (s *BareServer) promoteLocked(resource string, k *bareKey) {
	for len(k.queue) > 0 && k.compatible(k.queue[0].mode) {
		head := k.queue[0]
		k.queue[0] = nil
		k.queue = k.queue[1:]
		head.ch <- s.grantLocked(resource, k, head.mode, head.ttl)
	}
}

func (s *BareServer) grantLocked(resource string, k *bareKey, mode api.Mode, ttl time.Duration) api.AcquireResponse {
	s.nextToken++
	s.nextLease++
	leaseID := "b" + strconv.FormatUint(s.nextLease, 36)
	h := &bareHolder{mode: mode}
	h.timer = time.AfterFunc(ttl, func() { s.expire(resource, leaseID) })
	k.holders[leaseID] = h
	if mode == api.Exclusive {
		k.exclusive++
	}
	return api.AcquireResponse{
		Granted:      true,
		LeaseID:      leaseID,
		FencingToken: s.nextToken,
		ExpiresInMs:  ttl.Milliseconds(),
		Mode:         mode,
		LogTimeMs:    s.logTimeMs(),
	}
}

// keyLocked returns the state of resource, creating it within bounds.
func (s *BareServer) keyLocked(resource string) (*bareKey, bool) {
	if k := s.keys[resource]; k != nil {
		return k, true
	}
	if s.closed || len(s.keys) >= bareMaxKeys {
		return nil, false
	}
	k := &bareKey{holders: make(map[string]*bareHolder), racers: make(map[*bareRacer]struct{})}
	s.keys[resource] = k
	return k, true
}

func (s *BareServer) dropIfIdleLocked(resource string, k *bareKey) {
	// Parked racers keep the key: they hold its pointer.
	if len(k.holders) == 0 && len(k.queue) == 0 && len(k.racers) == 0 {
		delete(s.keys, resource)
	}
}

// grantable reports whether a fresh request in mode is granted at once:
// it fits the holders and nobody is queued ahead (no barging past FIFO
// waiters, under either policy).
func (k *bareKey) grantable(mode api.Mode) bool {
	return k.compatible(mode) && len(k.queue) == 0
}

// compatible reports whether a request in mode could hold alongside the
// current holders.
func (k *bareKey) compatible(mode api.Mode) bool {
	if len(k.holders) == 0 {
		return true
	}
	return mode == api.Shared && k.exclusive == 0
}

func (s *BareServer) logTimeMs() int64 { return time.Since(s.start).Milliseconds() }

// decodeBody reads a bounded JSON body, answering 400 itself on failure.
func decodeBody(w http.ResponseWriter, r *http.Request, into any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, bareMaxBodyBytes)
	if err := json.NewDecoder(r.Body).Decode(into); err != nil {
		writeAPIError(w, api.CodeInvalidArgument, "bad JSON body: "+err.Error())
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		slog.Debug("bare server: write reply", "err", err)
	}
}

func writeAPIError(w http.ResponseWriter, code api.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code.HTTPStatus())
	if err := json.NewEncoder(w).Encode(api.Error{Error: msg, Code: code}); err != nil {
		slog.Debug("bare server: write error", "err", err)
	}
}
