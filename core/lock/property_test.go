package lock

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// propConfig has small limits so random logs hit every limit and eviction.
func propConfig() Config {
	return Config{
		MinTTL:             time.Millisecond,
		MaxTTL:             100 * time.Millisecond,
		MaxWait:            100 * time.Millisecond,
		MaxWaitersPerQueue: 3,
		MaxResources:       3,
		DedupeWindow:       80 * time.Millisecond,
		DedupeMax:          4,
		MaxIDLen:           8,
	}
}

var (
	propResources = []string{"r1", "r2", "r3", "r4"}
	// "bob\x00x" with request "1" and "bob" with request "x\x001" are
	// different pairs that a separator-joined dedupe key would confuse.
	propClients  = []string{"alice", "bob", "bob\x00x"}
	propRequests = []string{"", "", "x", "1", "x\x001"}
	propHosts    = []string{"h1", "h2"}
)

// logGen draws a random command log; it remembers what it issued so that
// releases, renews, cancels and retries mostly hit real leases.
type logGen struct {
	t        *rapid.T
	acquires []Command
	// attempts pairs each queued-able lease id with the attempts (original
	// or retries) that may cancel it.
	attempts []genAttempt
	nextID   uint64
}

// attempt is one proposal of a request: lease is the id the request first
// got, owner the id this attempt was proposed with.
type genAttempt struct {
	resource     string
	lease, owner LeaseID
}

func (g *logGen) freshID() LeaseID {
	g.nextID++
	var id LeaseID
	id[0] = 0xA0
	binary.BigEndian.PutUint64(id[8:], g.nextID)
	return id
}

// pick draws from 0..n-1, about uniformly. rapid favours small and extreme
// numbers, which would make a few choices dominate (most leases 1 ms long,
// most releases naming the first lease), so the drawn number is mixed first;
// 0 still maps to 0, the choice shrinking aims for.
func (g *logGen) pick(label string, n int) int {
	v := rapid.Uint64().Draw(g.t, label) * 0x9E3779B97F4A7C15
	return int((v >> 32) % uint64(n))
}

func (g *logGen) ms(label string, lo, hi int64) int64 {
	return lo + int64(g.pick(label, int(hi-lo+1)))
}

func pickFrom[E any](g *logGen, label string, list []E) E {
	return list[g.pick(label, len(list))]
}

func (g *logGen) acquire() Command {
	c := Command{
		Op:          OpAcquire,
		Resource:    pickFrom(g, "resource", propResources),
		ClientID:    pickFrom(g, "client", propClients),
		RequestID:   pickFrom(g, "request", propRequests),
		LeaseID:     g.freshID(),
		Mode:        pickFrom(g, "mode", []Mode{Exclusive, Shared}),
		TTLMs:       g.ms("ttl", 1, 100),
		Host:        pickFrom(g, "host", propHosts),
		Incarnation: uint64(1 + g.pick("incarnation", 2)),
	}
	if g.pick("waits", 5) < 3 {
		c.WaitMs = g.ms("wait", 1, 100)
	}
	if g.pick("throughput", 10) == 9 {
		c.Policy = Throughput
	}
	// r3 and r4 are mostly semaphores of 2 or 3, the others mostly plain
	// locks, so permits agree more often than not and mismatches still come.
	permits := []uint32{0, 0, 0, 1, 2}
	if c.Resource == "r3" || c.Resource == "r4" {
		permits = []uint32{2, 2, 2, 3, 0}
	}
	if c.Permits = pickFrom(g, "permits", permits); c.Permits > 1 && g.pick("semShared", 8) != 0 {
		c.Mode = Exclusive // a shared one is refused as invalid
	}
	if g.pick("graced", 3) == 0 {
		c.GraceMs = g.ms("grace", 1, c.TTLMs)
	}
	g.acquires = append(g.acquires, c)
	g.attempts = append(g.attempts, genAttempt{resource: c.Resource, lease: c.LeaseID, owner: c.LeaseID})
	return c
}

// recent picks one of the last eight acquires: old leases are long gone.
func (g *logGen) recent() Command {
	n := len(g.acquires)
	return g.acquires[n-1-g.pick("recent", min(n, 8))]
}

// target picks the lease a release, renew or cancel names: mostly one that
// was issued, sometimes on the wrong resource, sometimes one never issued.
func (g *logGen) target(op Op) Command {
	c := Command{Op: op, Resource: pickFrom(g, "resource", propResources)}
	switch k := g.pick("target", 10); {
	case len(g.acquires) > 0 && k < 8:
		a := g.recent()
		c.LeaseID, c.Resource = a.LeaseID, a.Resource
	case len(g.acquires) > 0 && k == 8:
		c.LeaseID = g.recent().LeaseID
	default:
		c.LeaseID = g.freshID()
	}
	if op == OpRenew && g.pick("newTTL", 2) == 1 {
		c.TTLMs = g.ms("ttl", 1, 100)
	}
	return c
}

// cancel names a queued request and the attempt giving up on it: mostly a
// real attempt (the original or a retry), sometimes another's, sometimes
// none (an unconditional cancel).
func (g *logGen) cancel() Command {
	c := g.target(OpCancel)
	if len(g.attempts) == 0 {
		return c
	}
	a := g.attempts[len(g.attempts)-1-g.pick("attempt", min(len(g.attempts), 8))]
	c.CallerGone = g.pick("callerGone", 4) == 0
	switch g.pick("owner", 6) {
	case 0:
		c.Owner = LeaseID{}
	case 1:
		c.Owner = a.owner
	default:
		c.Resource, c.LeaseID, c.Owner = a.resource, a.lease, a.owner
	}
	return c
}

// retry resends an earlier acquire as a client whose reply was lost would:
// same client and request id, new lease id from the proposer.
func (g *logGen) retry() Command {
	if len(g.acquires) == 0 {
		return g.acquire()
	}
	c := g.recent()
	first := c.LeaseID
	c.LeaseID = g.freshID()
	switch g.pick("moved", 8) {
	case 0:
		c.Resource = pickFrom(g, "resource", propResources)
	case 1:
		c.TTLMs = g.ms("ttl", 1, 100)
	case 2:
		c.WaitMs = g.ms("wait", 0, 100)
	case 3:
		c.Host, c.Incarnation = pickFrom(g, "host", propHosts), uint64(1+g.pick("incarnation", 2))
	case 4:
		c.Permits = pickFrom(g, "permits", []uint32{0, 2, 3})
	}
	g.attempts = append(g.attempts, genAttempt{resource: c.Resource, lease: first, owner: c.LeaseID})
	return c
}

func (g *logGen) invalid() Command {
	c := g.acquire()
	g.acquires = g.acquires[:len(g.acquires)-1]
	switch g.pick("invalid", 11) {
	case 8:
		c.Permits = MaxPermits + 1
	case 9:
		c.Permits, c.Mode = 2, Shared
	case 0:
		c.TTLMs = 0
	case 1:
		c.TTLMs = 101
	case 2:
		c.Resource = "resource9" // 9 bytes, MaxIDLen is 8
	case 3:
		c.Mode = 0
	case 4:
		c.WaitMs = 101
	case 5:
		c.ClientID = "\xff"
	case 6:
		c = Command{Op: OpRelease, Resource: c.Resource}
	case 7:
		c = Command{Op: OpRenew, Resource: c.Resource, LeaseID: c.LeaseID, TTLMs: -1}
	case 10:
		c.GraceMs = c.TTLMs + 1
	}
	return c
}

func (g *logGen) command() Command {
	c := g.op()
	if g.pick("suspects", 10) == 0 {
		c.Suspects = []string{pickFrom(g, "suspect", propHosts)}
	}
	return c
}

func (g *logGen) op() Command {
	switch k := g.pick("op", 23); {
	case k < 8:
		return g.acquire()
	case k < 11:
		return g.target(OpRelease)
	case k < 13:
		return g.target(OpRenew)
	case k < 15:
		return g.cancel()
	case k == 15:
		return Command{Op: OpTick}
	case k == 16:
		return Command{Op: OpStatus, Resource: pickFrom(g, "resource", propResources)}
	case k == 17:
		return g.retry()
	case k == 18:
		return g.retry()
	case k == 19:
		return Command{Op: OpHello, Host: pickFrom(g, "host", propHosts), Incarnation: uint64(1 + g.pick("incarnation", 3))}
	case k == 20:
		c := g.target(OpOrphan)
		if len(g.attempts) > 0 && g.pick("orphanOwner", 2) == 0 {
			c.Owner = g.attempts[len(g.attempts)-1-g.pick("attempt", min(len(g.attempts), 8))].owner
		} else {
			c.Host, c.Incarnation = pickFrom(g, "host", propHosts), uint64(1+g.pick("incarnation", 3))
		}
		return c
	}
	return g.invalid()
}

// drawLog draws up to 150 entries whose leader clock mostly moves forward
// by up to 8 ms (so leases of up to 100 ms overlap and queues form),
// sometimes leaps, sometimes goes backwards, and sometimes jumps to a new
// term with an unrelated reading.
func drawLog(t *rapid.T) []Entry {
	g := &logGen{t: t}
	n := rapid.IntRange(1, 150).Draw(t, "entries")
	term := uint64(1)
	monoMs := g.ms("mono0", 0, 1e9)
	log := make([]Entry, 0, n)
	for i := 0; i < n; i++ {
		switch g.pick("clock", 20) {
		case 19:
			term++
			monoMs = g.ms("monoNewTerm", 0, 1e9)
		case 18:
			monoMs -= g.ms("back", 0, 30)
		case 17:
			monoMs += g.ms("leap", 0, 150)
		default:
			monoMs += g.ms("step", 0, 8)
		}
		c := g.command()
		c.Mono = monoMs * int64(time.Millisecond)
		log = append(log, Entry{Index: uint64(i + 1), Term: term, Command: c})
	}
	return log
}

// outcome is what one Apply returned, with the events copied out of the
// slice State reuses.
type outcome struct {
	res    Result
	events []Event
}

func applyAll(s *State, log []Entry) []outcome {
	out := make([]outcome, 0, len(log))
	for _, e := range log {
		res, events := s.Apply(e)
		out = append(out, outcome{res, copyEvents(events)})
	}
	return out
}

// logOnFailure prints a failing log, so a shrunk counterexample reads as a
// list of commands.
func logOnFailure(t *rapid.T, log []Entry) {
	if !t.Failed() {
		return
	}
	for _, e := range log {
		t.Logf("%s", entryText(e))
	}
}

// copyEvents copies events out of the slice State reuses; none is nil.
func copyEvents(events []Event) []Event {
	if len(events) == 0 {
		return nil
	}
	return slices.Clone(events)
}

// sameOutcomes requires a rerun of log to answer as the first run did.
func sameOutcomes(t *rapid.T, what string, log []Entry, got, want []outcome) {
	for i := range want {
		if !reflect.DeepEqual(got[i].res, want[i].res) || !sameEvents(got[i].events, want[i].events) {
			t.Fatalf("%s: %s\n result %s events %+v\n first  %s events %+v", what, entryText(log[i]),
				resultText(got[i].res), got[i].events, resultText(want[i].res), want[i].events)
		}
	}
}

// resultText prints a Result with its Status, not the pointer.
func resultText(r Result) string {
	st := "<nil>"
	if r.Status != nil {
		st = fmt.Sprintf("%+v", *r.Status)
	}
	r.Status = nil
	return fmt.Sprintf("%+v status=%s", r, st)
}

func sameEvents(a, b []Event) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

func entryText(e Entry) string {
	c := e.Command
	return fmt.Sprintf("#%d term=%d mono=%dms %v res=%q client=%q req=%q lease=%s mode=%v policy=%v ttl=%d wait=%d owner=%s host=%s/%d suspects=%v",
		e.Index, e.Term, c.Mono/int64(time.Millisecond), c.Op, c.Resource, c.ClientID, c.RequestID,
		c.LeaseID, c.Mode, c.Policy, c.TTLMs, c.WaitMs, c.Owner, c.Host, c.Incarnation, c.Suspects)
}

// invariantChecker follows the event stream and fails on what must never
// happen, whatever the model says.
type invariantChecker struct {
	lastToken uint64
	// pending lists each resource's waiters in enqueue order.
	pending   map[string][]LeaseID
	cancelled map[LeaseID]bool
}

func (c *invariantChecker) observe(t *rapid.T, events []Event) {
	for _, e := range events {
		switch e.Kind {
		case EventEnqueue:
			c.pending[e.Resource] = append(c.pending[e.Resource], e.Lease.ID)
		case EventCancel:
			c.cancelled[e.Lease.ID] = true
			q := c.pending[e.Resource]
			i := slices.Index(q, e.Lease.ID)
			if i < 0 {
				t.Fatalf("cancel of %s which is not queued on %s", e.Lease.ID, e.Resource)
			}
			c.pending[e.Resource] = slices.Delete(q, i, i+1)
		case EventGrant:
			if e.Lease.Token <= c.lastToken {
				t.Fatalf("token %d granted after token %d", e.Lease.Token, c.lastToken)
			}
			c.lastToken = e.Lease.Token
			if c.cancelled[e.Lease.ID] {
				t.Fatalf("grant to cancelled waiter %s", e.Lease.ID)
			}
			q := c.pending[e.Resource]
			if e.Queued {
				// FIFO: a queued grant goes to the oldest waiter still pending.
				if len(q) == 0 || q[0] != e.Lease.ID {
					t.Fatalf("queued grant to %s on %s, but the queue head is %v", e.Lease.ID, e.Resource, q)
				}
				c.pending[e.Resource] = q[1:]
			} else if len(q) != 0 {
				t.Fatalf("direct grant to %s on %s past waiters %v", e.Lease.ID, e.Resource, q)
			}
		}
	}
}

// checkHolders requires one exclusive holder or only shared ones, or on a
// semaphore of N up to N exclusive ones.
func checkHolders(t *rapid.T, st Status) {
	if st.Permits > 1 {
		for _, h := range st.Holders {
			if h.Mode != Exclusive || len(st.Holders) > int(st.Permits) {
				t.Fatalf("%s: semaphore of %d has %d holders, %s is %v", st.Resource, st.Permits, len(st.Holders), h.ID, h.Mode)
			}
		}
		return
	}
	for _, h := range st.Holders {
		if h.Mode == Exclusive && len(st.Holders) > 1 {
			t.Fatalf("%s: exclusive holder %s shares with %d others", st.Resource, h.ID, len(st.Holders)-1)
		}
	}
}

// TestMatchesModel applies random logs to State and to the reference model
// and requires identical results, events and per-resource status after every
// entry, while checking the safety, token and FIFO invariants directly; then
// it replays the log, and restores mid-way, requiring identical snapshots.
func TestMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		log := drawLog(t)
		cfg := propConfig()
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		m := newRefModel(cfg)
		inv := &invariantChecker{pending: map[string][]LeaseID{}, cancelled: map[LeaseID]bool{}}
		outcomes := make([]outcome, 0, len(log))
		defer func() { logOnFailure(t, log) }() // log as it is at the failure, not as it was here
		for _, e := range log {
			res, events := s.Apply(e)
			events = copyEvents(events)
			wantRes, wantEvents := m.apply(e)
			if !reflect.DeepEqual(res, wantRes) {
				t.Fatalf("%s\n result %s\n model  %s", entryText(e), resultText(res), resultText(wantRes))
			}
			if !sameEvents(events, wantEvents) {
				t.Fatalf("%s\n events %+v\n model  %+v", entryText(e), events, wantEvents)
			}
			inv.observe(t, events)
			for _, name := range propResources {
				st := s.Status(name)
				checkHolders(t, st)
				if want := m.status(name); !reflect.DeepEqual(st, want) {
					t.Fatalf("after %s\n status %+v\n model  %+v", entryText(e), st, want)
				}
			}
			if got := s.Metrics(); got.LastToken != m.lastToken || got.DedupeEntries != len(m.dedupe) {
				t.Fatalf("after %s\n last token %d, model %d; dedupe entries %d, model %d",
					entryText(e), got.LastToken, m.lastToken, got.DedupeEntries, len(m.dedupe))
			}
			checkSnapshotRoundTrip(t, s)
			outcomes = append(outcomes, outcome{res, events})
		}
		final := s.Snapshot()

		replay := mustNew(t, cfg)
		sameOutcomes(t, "replay", log, applyAll(replay, log), outcomes)
		if !bytes.Equal(replay.Snapshot(), final) {
			t.Fatalf("replaying the log gave a different snapshot")
		}

		cut := rapid.IntRange(0, len(log)).Draw(t, "restoreAt")
		first := mustNew(t, cfg)
		applyAll(first, log[:cut])
		restored := mustNew(t, cfg)
		if err := restored.Restore(first.Snapshot()); err != nil {
			t.Fatalf("restore at %d: %v", cut, err)
		}
		sameOutcomes(t, fmt.Sprintf("restored before entry %d", cut+1), log[cut:], applyAll(restored, log[cut:]), outcomes[cut:])
		if !bytes.Equal(restored.Snapshot(), final) {
			t.Fatalf("state restored before entry %d ended with a different snapshot", cut+1)
		}
	})
}
