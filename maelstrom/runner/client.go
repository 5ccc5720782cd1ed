package runner

import (
	"context"
	"encoding/json"
	"math/rand"
	"sync"
	"time"

	"github.com/lockstep/lockstep/maelstrom"
)

// switchboard matches replies to the client calls awaiting them.
type switchboard struct {
	mu      sync.Mutex
	pending map[string]map[int]chan maelstrom.Message // client -> msg_id -> reply
}

func newSwitchboard() *switchboard {
	return &switchboard{pending: make(map[string]map[int]chan maelstrom.Message)}
}

func (s *switchboard) await(client string, msgID int) chan maelstrom.Message {
	ch := make(chan maelstrom.Message, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending[client] == nil {
		s.pending[client] = make(map[int]chan maelstrom.Message)
	}
	s.pending[client][msgID] = ch
	return ch
}

func (s *switchboard) forget(client string, msgID int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending[client], msgID)
}

// deliver hands m to the call awaiting it. A reply nobody awaits (its
// call timed out) is dropped; that still counts as routed.
func (s *switchboard) deliver(m maelstrom.Message) bool {
	h, err := m.Header()
	if err != nil || h.InReplyTo == nil {
		return false
	}
	s.mu.Lock()
	ch := s.pending[m.Dest][*h.InReplyTo]
	delete(s.pending[m.Dest], *h.InReplyTo)
	s.mu.Unlock()
	if ch != nil {
		ch <- m
	}
	return true
}

// clientState is what a logical client carries between its operations.
type clientState struct {
	name    string
	process int
	// leases are the lock workload's leases this client believes it holds;
	// stale ones it held before, for releases and renews that should fail.
	leases []heldLease
	stale  []heldLease
}

type heldLease struct {
	resource string
	id       string
	expires  time.Time // local estimate, from expires_in
}

// request is one operation a workload wants issued.
type request struct {
	f    string
	body map[string]any
	// extra is added to the op timeout (an acquire's wait).
	extra time.Duration
}

// generator produces a workload's operations and learns from their outcomes.
type generator interface {
	next(r *rand.Rand, st *clientState, now time.Time) request
	observe(st *clientState, op Op, now time.Time)
}

// call sends one request from client to node and waits for the reply up to
// timeout. It returns the reply, or ok=false when none came in time.
func (r *run) call(ctx context.Context, client, node string, msgID int, body map[string]any, timeout time.Duration) (maelstrom.Message, bool) {
	body["msg_id"] = msgID
	raw, err := json.Marshal(body)
	if err != nil {
		return maelstrom.Message{}, false
	}
	ch := r.board.await(client, msgID)
	r.net.send(maelstrom.Message{Src: client, Dest: node, Body: raw})
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m := <-ch:
		return m, true
	case <-t.C:
	case <-ctx.Done():
	}
	r.board.forget(client, msgID)
	return maelstrom.Message{}, false
}

// classify turns a reply (or its absence) into the op's type and code,
// by Maelstrom's definite/indefinite rules.
func classify(m maelstrom.Message, replied bool) (string, *int) {
	if !replied {
		return TypeInfo, nil
	}
	e := m.Err()
	if e == nil {
		return TypeOK, nil
	}
	code := e.Code
	if maelstrom.Definite(code) {
		return TypeFail, &code
	}
	return TypeInfo, &code
}
