package lock

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// manyRef is the simple reference the multi property test holds State
// against: holders per resource rebuilt from the events alone, the last
// token per resource, and what each multi request is known to be.
type manyRef struct {
	holders map[string]map[LeaseID]Mode
	tokens  map[string]uint64
	// requests are the multi requests issued, by lease id.
	requests map[LeaseID][]string
	granted  map[LeaseID]bool
}

// observe applies one entry's events, failing on a broken rule: a second
// exclusive holder, a token not above the resource's last, a multi
// request granted partly or twice.
func (m *manyRef) observe(t fataler, events []Event) {
	grants := map[LeaseID]int{}
	for _, e := range events {
		hs := m.holders[e.Resource]
		if hs == nil {
			hs = map[LeaseID]Mode{}
			m.holders[e.Resource] = hs
		}
		switch e.Kind {
		case EventGrant:
			if e.Lease.Token <= m.tokens[e.Resource] {
				t.Fatalf("%s: token %d after %d", e.Resource, e.Lease.Token, m.tokens[e.Resource])
			}
			m.tokens[e.Resource] = e.Lease.Token
			if e.Permits > 1 && (len(hs) >= int(e.Permits) || !e.Many.IsZero() || e.Lease.Mode != Exclusive) {
				t.Fatalf("%s: %s granted a permit of %d while %d are held (multi: %v)", e.Resource, e.Lease.ID, e.Permits, len(hs), !e.Many.IsZero())
			}
			for id, mode := range hs {
				if e.Permits > 1 {
					break // a semaphore's holders are all exclusive, checked above
				}
				if mode == Exclusive || e.Lease.Mode == Exclusive {
					t.Fatalf("%s: %s granted %v while %s holds %v", e.Resource, e.Lease.ID, e.Lease.Mode, id, mode)
				}
			}
			hs[e.Lease.ID] = e.Lease.Mode
			if !e.Many.IsZero() {
				grants[e.Many]++
			}
		case EventRelease, EventExpire:
			delete(hs, e.Lease.ID)
		}
	}
	for id, n := range grants {
		if m.granted[id] || n != len(m.requests[id]) {
			t.Fatalf("multi request %s: %d of %d resources granted in one entry (granted before: %v)", id, n, len(m.requests[id]), m.granted[id])
		}
		m.granted[id] = true
	}
}

// check holds the state against the reference after an entry: the same
// holders on every resource, and each multi request queued on all of its
// resources or none, never queued while holding, never holding before
// its grant.
func (m *manyRef) check(t *rapid.T, s *State, after string) {
	for _, name := range propResources {
		st := s.Status(name)
		checkHolders(t, st)
		var got []LeaseID
		for _, h := range st.Holders {
			got = append(got, h.ID)
		}
		var want []LeaseID
		for id := range m.holders[name] {
			want = append(want, id)
		}
		slices.SortFunc(got, compareIDs)
		slices.SortFunc(want, compareIDs)
		if !slices.Equal(got, want) {
			t.Fatalf("after %s: %s held by %v, events say %v", after, name, got, want)
		}
	}
	for id, resources := range m.requests {
		queued, held := 0, 0
		for j, name := range resources {
			r := s.resources.find(name)
			if r == nil {
				continue
			}
			if r.findWaiter(ManyLeaseID(id, j)) >= 0 {
				queued++
			}
			if r.findHolder(ManyLeaseID(id, j)) >= 0 {
				held++
			}
		}
		switch {
		case queued != 0 && queued != len(resources):
			t.Fatalf("after %s: multi request %s queued on %d of %d resources", after, id, queued, len(resources))
		case queued != 0 && held != 0:
			t.Fatalf("after %s: multi request %s queued and holding", after, id)
		case held != 0 && !m.granted[id]:
			t.Fatalf("after %s: multi request %s holds %d resources before its grant", after, id, held)
		}
	}
}

func compareIDs(a, b LeaseID) int { return slices.Compare(a[:], b[:]) }

// manyID draws a lease id for a multi request: logGen's ids count up in
// their low bytes, where a multi request's parts count too, so the count
// goes in the high bytes as well (random ids never meet in practice).
func (g *logGen) manyID() LeaseID {
	id := g.freshID()
	copy(id[1:8], id[9:16])
	return id
}

// manyOp draws a multi acquire (1..3 distinct resources), or a cancel of
// a recent one, or one of the single-resource commands of logGen.
func manyOp(g *logGen, requests map[LeaseID][]string, recent *[]Command) Command {
	switch k := g.pick("manyOp", 10); {
	case k < 4:
		order := slices.Clone(propResources)
		for i := len(order) - 1; i > 0; i-- {
			j := g.pick("shuffle", i+1)
			order[i], order[j] = order[j], order[i]
		}
		c := Command{
			Op: OpAcquireMany, Resources: order[:1+g.pick("size", 3)],
			ClientID: pickFrom(g, "client", propClients), RequestID: pickFrom(g, "request", propRequests),
			LeaseID: g.manyID(), Mode: pickFrom(g, "mode", []Mode{Exclusive, Shared}),
			TTLMs: g.ms("ttl", 1, 100), Host: pickFrom(g, "host", propHosts), Incarnation: 1,
		}
		if g.pick("waits", 4) < 3 {
			c.WaitMs = g.ms("wait", 1, 100)
		}
		requests[c.LeaseID] = c.Resources
		*recent = append(*recent, c)
		return c
	case k < 5 && len(*recent) > 0:
		a := (*recent)[len(*recent)-1-g.pick("recent", min(len(*recent), 4))]
		c := Command{Op: OpCancel, Resources: a.Resources, LeaseID: a.LeaseID}
		if g.pick("owned", 2) == 0 {
			c.Owner = a.LeaseID
		}
		c.CallerGone = g.pick("callerGone", 4) == 0
		return c
	case k < 6 && len(*recent) > 0:
		// A retry: same request, new lease id.
		c := (*recent)[len(*recent)-1-g.pick("recent", min(len(*recent), 4))]
		c.LeaseID = g.manyID()
		requests[c.LeaseID] = c.Resources // refused first ones are judged afresh
		return c
	case k < 7 && len(*recent) > 0:
		// Release or renew one part of a multi request.
		a := (*recent)[len(*recent)-1-g.pick("recent", min(len(*recent), 4))]
		j := g.pick("part", len(a.Resources))
		op := OpRelease
		if g.pick("renew", 3) == 0 {
			op = OpRenew
		}
		return Command{Op: op, Resource: a.Resources[j], LeaseID: ManyLeaseID(a.LeaseID, j)}
	}
	return g.command()
}

// TestManyProperties: goal — with multi and single requests mixed, no
// resource is ever held exclusively twice, a multi request is granted all
// at once or not at all and is queued on all of its resources or none,
// tokens rise per resource, replicas agree, and nothing deadlocks.
// Method: random logs (rapid) checked against manyRef after every entry;
// a replay and a restore must give the same snapshot; finally every
// holder is released, round after round, at one log time (so no wait can
// run out), and every live waiter must have been granted, with a holder
// somewhere after every round until then.
func TestManyProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := propConfig()
		cfg.MaxResources = len(propResources)
		cfg.MaxWaitersPerQueue = 4
		g := &logGen{t: t}
		ref := &manyRef{holders: map[string]map[LeaseID]Mode{}, tokens: map[string]uint64{},
			requests: map[LeaseID][]string{}, granted: map[LeaseID]bool{}}
		var recent []Command
		s := mustNew(t, cfg)
		var log []Entry
		defer func() { logOnFailure(t, log) }() // log as it is at the failure, not as it was here
		monoMs := int64(0)
		n := rapid.IntRange(1, 120).Draw(t, "entries")
		for i := 0; i < n; i++ {
			monoMs += g.ms("step", 0, 8)
			c := manyOp(g, ref.requests, &recent)
			c.Mono = monoMs * int64(time.Millisecond)
			e := Entry{Index: uint64(i + 1), Term: 1, Command: c}
			log = append(log, e)
			_, events := s.Apply(e)
			ref.observe(t, events)
			ref.check(t, s, entryText(e))
			checkCounters(t, s, entryText(e))
		}
		checkSnapshotRoundTrip(t, s)
		replay := mustNew(t, cfg)
		applyAll(replay, log)
		if replay.Digest() != s.Digest() {
			t.Fatalf("replaying the log gave another digest")
		}

		// Drain at one log time: release every holder, round after round.
		index := uint64(n)
		apply := func(c Command) {
			index++
			c.Mono = monoMs * int64(time.Millisecond)
			e := Entry{Index: index, Term: 1, Command: c}
			_, events := s.Apply(e)
			ref.observe(t, events)
			ref.check(t, s, "drain "+entryText(e))
		}
		for round := 0; ; round++ {
			var holders []Command
			waiting := 0
			for _, name := range propResources {
				st := s.Status(name)
				waiting += len(st.Queue)
				for _, h := range st.Holders {
					holders = append(holders, Command{Op: OpRelease, Resource: name, LeaseID: h.ID})
				}
			}
			if waiting == 0 {
				break
			}
			if len(holders) == 0 || round > 4*n {
				t.Fatalf("deadlock: %d live waiters, %d holders after %d drain rounds", waiting, len(holders), round)
			}
			for _, c := range holders {
				apply(c)
			}
		}
	})
}

// recorder is a fataler that records the first failure and stops the
// check by panicking.
type recorder struct{ msg string }

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(r)
}

// TestManyPropertiesCanFail: goal — the reference catches a multi request
// granted on part of its resources. Method: feed it such an entry's events.
func TestManyPropertiesCanFail(t *testing.T) {
	ref := &manyRef{holders: map[string]map[LeaseID]Mode{}, tokens: map[string]uint64{},
		requests: map[LeaseID][]string{lid('m'): {"r1", "r2"}}, granted: map[LeaseID]bool{}}
	partial := []Event{{Kind: EventGrant, Resource: "r1", Lease: Lease{ID: lid('m'), Mode: Exclusive, Token: 1}, Many: lid('m'), ManySize: 2}}
	rec := &recorder{}
	func() {
		defer func() { _ = recover() }()
		ref.observe(rec, partial)
	}()
	if rec.msg == "" {
		t.Fatal("a partial grant passed the reference")
	}
	t.Logf("caught: %s", rec.msg)
}
