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
)

// logGen draws a random command log; it remembers what it issued so that
// releases, renews, cancels and retries mostly hit real leases.
type logGen struct {
	t        *rapid.T
	acquires []Command
	nextID   uint64
}

func (g *logGen) freshID() LeaseID {
	g.nextID++
	var id LeaseID
	id[0] = 0xA0
	binary.BigEndian.PutUint64(id[8:], g.nextID)
	return id
}

func (g *logGen) ms(label string, lo, hi int64) int64 {
	return rapid.Int64Range(lo, hi).Draw(g.t, label)
}

func (g *logGen) acquire() Command {
	c := Command{
		Op:        OpAcquire,
		Resource:  rapid.SampledFrom(propResources).Draw(g.t, "resource"),
		ClientID:  rapid.SampledFrom(propClients).Draw(g.t, "client"),
		RequestID: rapid.SampledFrom(propRequests).Draw(g.t, "request"),
		LeaseID:   g.freshID(),
		Mode:      rapid.SampledFrom([]Mode{Exclusive, Shared}).Draw(g.t, "mode"),
		TTLMs:     g.ms("ttl", 1, 100),
	}
	if rapid.IntRange(0, 4).Draw(g.t, "waits") > 1 {
		c.WaitMs = g.ms("wait", 1, 100)
	}
	if rapid.IntRange(0, 9).Draw(g.t, "throughput") == 9 {
		c.Policy = Throughput
	}
	g.acquires = append(g.acquires, c)
	return c
}

// target picks the lease a release, renew or cancel names: mostly one that
// was issued, sometimes on the wrong resource, sometimes one never issued.
func (g *logGen) target(op Op) Command {
	c := Command{Op: op, Resource: rapid.SampledFrom(propResources).Draw(g.t, "resource")}
	switch k := rapid.IntRange(0, 9).Draw(g.t, "target"); {
	case len(g.acquires) > 0 && k < 8:
		a := rapid.SampledFrom(g.acquires).Draw(g.t, "lease")
		c.LeaseID, c.Resource = a.LeaseID, a.Resource
	case len(g.acquires) > 0 && k == 8:
		c.LeaseID = rapid.SampledFrom(g.acquires).Draw(g.t, "lease").LeaseID
	default:
		c.LeaseID = g.freshID()
	}
	if op == OpRenew && rapid.Bool().Draw(g.t, "newTTL") {
		c.TTLMs = g.ms("ttl", 1, 100)
	}
	return c
}

// retry resends an earlier acquire as a client whose reply was lost would:
// same client and request id, new lease id from the proposer.
func (g *logGen) retry() Command {
	if len(g.acquires) == 0 {
		return g.acquire()
	}
	c := rapid.SampledFrom(g.acquires).Draw(g.t, "retried")
	c.LeaseID = g.freshID()
	if rapid.IntRange(0, 4).Draw(g.t, "moved") == 0 {
		c.Resource = rapid.SampledFrom(propResources).Draw(g.t, "resource")
	}
	return c
}

func (g *logGen) invalid() Command {
	c := g.acquire()
	g.acquires = g.acquires[:len(g.acquires)-1]
	switch rapid.IntRange(0, 7).Draw(g.t, "invalid") {
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
	}
	return c
}

func (g *logGen) command() Command {
	switch k := rapid.IntRange(0, 19).Draw(g.t, "op"); {
	case k < 8:
		return g.acquire()
	case k < 11:
		return g.target(OpRelease)
	case k < 13:
		return g.target(OpRenew)
	case k < 15:
		return g.target(OpCancel)
	case k == 15:
		return Command{Op: OpTick}
	case k == 16:
		return Command{Op: OpStatus, Resource: rapid.SampledFrom(propResources).Draw(g.t, "resource")}
	case k == 17:
		return g.retry()
	}
	return g.invalid()
}

// drawLog draws up to 150 entries whose leader clock mostly moves forward
// by up to 40 ms, sometimes backwards, and sometimes jumps to a new term
// with an unrelated reading.
func drawLog(t *rapid.T) []Entry {
	g := &logGen{t: t}
	n := rapid.IntRange(1, 150).Draw(t, "entries")
	term := uint64(1)
	monoMs := g.ms("mono0", 0, 1e9)
	log := make([]Entry, 0, n)
	for i := 0; i < n; i++ {
		switch rapid.IntRange(0, 19).Draw(t, "clock") {
		case 19:
			term++
			monoMs = g.ms("monoNewTerm", 0, 1e9)
		case 18:
			monoMs -= g.ms("back", 0, 30)
		default:
			monoMs += g.ms("step", 0, 40)
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

func applyAll(t *rapid.T, s *State, log []Entry) []outcome {
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

func sameEvents(a, b []Event) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

func entryText(e Entry) string {
	c := e.Command
	return fmt.Sprintf("#%d term=%d mono=%dms %v res=%q client=%q req=%q lease=%s mode=%v policy=%v ttl=%d wait=%d",
		e.Index, e.Term, c.Mono/int64(time.Millisecond), c.Op, c.Resource, c.ClientID, c.RequestID,
		c.LeaseID, c.Mode, c.Policy, c.TTLMs, c.WaitMs)
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

// checkHolders requires one exclusive holder or only shared ones.
func checkHolders(t *rapid.T, st Status) {
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
		defer logOnFailure(t, log)
		for _, e := range log {
			res, events := s.Apply(e)
			events = copyEvents(events)
			wantRes, wantEvents := m.apply(e)
			if !reflect.DeepEqual(res, wantRes) {
				t.Fatalf("%s\n result %+v\n model  %+v", entryText(e), res, wantRes)
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
			outcomes = append(outcomes, outcome{res, events})
		}
		final := s.Snapshot()

		replay, _ := New(cfg)
		if again := applyAll(t, replay, log); !reflect.DeepEqual(again, outcomes) {
			t.Fatalf("replaying the log answered differently")
		}
		if !bytes.Equal(replay.Snapshot(), final) {
			t.Fatalf("replaying the log gave a different snapshot")
		}

		cut := rapid.IntRange(0, len(log)).Draw(t, "restoreAt")
		first, _ := New(cfg)
		applyAll(t, first, log[:cut])
		restored, _ := New(cfg)
		if err := restored.Restore(first.Snapshot()); err != nil {
			t.Fatalf("restore at %d: %v", cut, err)
		}
		if rest := applyAll(t, restored, log[cut:]); !reflect.DeepEqual(rest, outcomes[cut:]) {
			t.Fatalf("state restored at entry %d answered differently afterwards", cut)
		}
		if !bytes.Equal(restored.Snapshot(), final) {
			t.Fatalf("state restored at entry %d ended with a different snapshot", cut)
		}
	})
}
