package lock

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// dl describes a result with its cycle: "deadlock [a b]".
func dl(op Op, r Result) string {
	if r.Code == Deadlock {
		return fmt.Sprintf("deadlock [%s]", strings.Join(r.Cycle, " "))
	}
	return describeManyResult(op, r)
}

// acqBy is acq sent by client-<who> instead of the lease label's client.
func acqBy(res string, label, who byte, mode Mode, waitMs int64) Command {
	cmd := acq(res, label, mode, 10_000, waitMs)
	cmd.ClientID = "client-" + string(who)
	return cmd
}

// TestDeadlockInGroup: goal — an acquire that would close a wait-for cycle
// inside the group is refused at once with its cycle (requester first),
// nothing queued, while every wait outside a cycle queues as before. Method:
// scripted logs, one per shape, each step's answer compared; then the queue
// the refused request would have entered is read back.
func TestDeadlockInGroup(t *testing.T) {
	type st struct {
		ms   int64
		cmd  Command
		want string
	}
	cases := []struct {
		name  string
		steps []st
		// after, if set, is the status of resource after the last step.
		resource, after string
	}{
		{name: "two clients", steps: []st{
			{0, acqBy("x", 'a', 'A', X, 0), "granted a#1@10000"},
			{1, acqBy("y", 'b', 'B', X, 0), "granted b#2@10001"},
			{2, acqBy("y", 'c', 'A', X, 5000), "queued c pos=1"},
			{3, acqBy("x", 'd', 'B', X, 5000), "deadlock [client-B client-A]"},
			// The refused request left nothing behind; A still waits and
			// gets y once B lets go.
			{4, rel("y", 'b'), "released b#2@10001"},
		}, resource: "y", after: "holders=[c#3@10004] queue=[]"},
		{name: "three clients", steps: []st{
			{0, acqBy("x", 'a', 'A', X, 0), "granted a#1@10000"},
			{0, acqBy("y", 'b', 'B', X, 0), "granted b#2@10000"},
			{0, acqBy("z", 'c', 'C', X, 0), "granted c#3@10000"},
			{1, acqBy("y", 'd', 'A', X, 5000), "queued d pos=1"},
			{2, acqBy("z", 'e', 'B', X, 5000), "queued e pos=1"},
			{3, acqBy("x", 'f', 'C', X, 5000), "deadlock [client-C client-A client-B]"},
		}, resource: "x", after: "holders=[a#1@10000] queue=[]"},
		{name: "chain without a cycle queues", steps: []st{
			{0, acqBy("x", 'a', 'A', X, 0), "granted a#1@10000"},
			{0, acqBy("y", 'b', 'B', X, 0), "granted b#2@10000"},
			{1, acqBy("y", 'c', 'A', X, 5000), "queued c pos=1"},
			{2, acqBy("x", 'd', 'C', X, 5000), "queued d pos=1"},
		}},
		{name: "re-entrant acquire waits behind itself as before", steps: []st{
			{0, acqBy("x", 'a', 'A', X, 0), "granted a#1@10000"},
			{1, acqBy("x", 'b', 'A', X, 5000), "queued b pos=1"},
		}},
		{name: "shared holders do not block a shared request", steps: []st{
			{0, acqBy("x", 'a', 'A', S, 0), "granted a#1@10000"},
			{0, acqBy("y", 'b', 'B', X, 0), "granted b#2@10000"},
			{1, acqBy("y", 'c', 'A', X, 5000), "queued c pos=1"},
			{2, acqBy("x", 'd', 'B', S, 5000), "granted d#3@10002"},
		}},
		{name: "upgrade deadlock of two shared holders", steps: []st{
			{0, acqBy("x", 'a', 'A', S, 0), "granted a#1@10000"},
			{0, acqBy("x", 'b', 'B', S, 0), "granted b#2@10000"},
			{1, acqBy("x", 'c', 'A', X, 5000), "queued c pos=1"},
			{2, acqBy("x", 'd', 'B', X, 5000), "deadlock [client-B client-A]"},
		}},
		{name: "a wait that elapsed is no edge", steps: []st{
			{0, acqBy("x", 'a', 'A', X, 0), "granted a#1@10000"},
			{0, acqBy("y", 'b', 'B', X, 0), "granted b#2@10000"},
			{1, acqBy("y", 'c', 'A', X, 100), "queued c pos=1"},
			{200, acqBy("x", 'd', 'B', X, 5000), "queued d pos=1"},
		}},
		{name: "an edge ends with the grant", steps: []st{
			{0, acqBy("x", 'a', 'A', X, 0), "granted a#1@10000"},
			{0, acqBy("y", 'b', 'B', X, 0), "granted b#2@10000"},
			{1, acqBy("y", 'c', 'A', X, 5000), "queued c pos=1"},
			{2, rel("y", 'b'), "released b#2@10000"},
			{3, acqBy("x", 'd', 'B', X, 5000), "queued d pos=1"},
		}},
		{name: "a waiter ahead in a FIFO queue counts", steps: []st{
			// A holds x, B waits for x, C waits for x behind B and holds
			// y; B then... no: A waits for y (held by C) — C waits for
			// A (holder of x) and for B (ahead of it).
			{0, acqBy("x", 'a', 'A', X, 0), "granted a#1@10000"},
			{0, acqBy("y", 'b', 'C', X, 0), "granted b#2@10000"},
			{1, acqBy("x", 'c', 'B', X, 5000), "queued c pos=1"},
			{2, acqBy("x", 'd', 'C', X, 5000), "queued d pos=2"},
			{3, acqBy("y", 'e', 'A', X, 5000), "deadlock [client-A client-C]"},
		}},
		{name: "multi request waits for every resource it lacks", steps: []st{
			{0, acqBy("x", 'a', 'A', X, 0), "granted a#1@10000"},
			{0, acqBy("y", 'b', 'B', X, 0), "granted b#2@10000"},
			{1, withClient(many('m', X, 10_000, 5000, "z", "y"), "client-A"), "queued m pos=1"},
			{2, acqBy("x", 'd', 'B', X, 5000), "deadlock [client-B client-A]"},
		}},
		{name: "multi request heading a queue nobody holds", steps: []st{
			// A's multi request heads x's queue (x is free, y is not):
			// B's wait for x waits for A, which waits for B's y.
			{0, acqBy("y", 'b', 'B', X, 0), "granted b#1@10000"},
			{1, withClient(many('m', S, 10_000, 5000, "x", "y"), "client-A"), "queued m pos=1"},
			{2, acqBy("x", 'd', 'B', S, 5000), "deadlock [client-B client-A]"},
		}},
		{name: "multi request closing a cycle is refused", steps: []st{
			{0, acqBy("x", 'a', 'A', X, 0), "granted a#1@10000"},
			{0, acqBy("y", 'b', 'B', X, 0), "granted b#2@10000"},
			{1, acqBy("y", 'c', 'A', X, 5000), "queued c pos=1"},
			{2, withClient(many('m', X, 10_000, 5000, "z", "x"), "client-B"), "deadlock [client-B client-A]"},
		}, resource: "z", after: "holders=[] queue=[]"},
		{name: "a wait on a semaphore waits for any permit: no edge", steps: []st{
			// C waits for a permit of s, held by A and B; A's wait for
			// C's y closes no cycle: B may let its permit go.
			{0, sem(acqBy("s", 'a', 'A', X, 0), 2), "granted a#1@10000"},
			{0, sem(acqBy("s", 'b', 'B', X, 0), 2), "granted b#2@10000"},
			{0, acqBy("y", 'c', 'C', X, 0), "granted c#3@10000"},
			{1, sem(acqBy("s", 'd', 'C', X, 5000), 2), "queued d pos=1"},
			{2, acqBy("y", 'e', 'A', X, 5000), "queued e pos=1"},
		}},
		{name: "a retry reviving an elapsed wait is judged anew", steps: []st{
			{0, acqBy("x", 'a', 'A', X, 0), "granted a#1@10000"},
			{0, acqBy("y", 'b', 'B', X, 0), "granted b#2@10000"},
			{1, as(acqBy("y", 'c', 'A', X, 100), "client-A", "r1"), "queued c pos=1"},
			{200, acqBy("x", 'd', 'B', X, 5000), "queued d pos=1"},
			// A's elapsed request is still in y's queue (nothing promoted
			// y); its retry would bring the edge A -> B back.
			{201, as(acqBy("y", 'e', 'A', X, 5000), "client-A", "r1"), "deadlock [client-A client-B]"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := mustNew(t, DefaultConfig())
			for i, step := range c.steps {
				res, _ := applyAt(s, uint64(i+1), step.ms, step.cmd)
				if got := dl(step.cmd.Op, res); got != step.want {
					t.Fatalf("step %d: %q, want %q", i, got, step.want)
				}
				checkCounters(t, s, fmt.Sprintf("step %d", i))
				checkSnapshotRoundTrip(t, s)
			}
			if c.resource != "" {
				if got := describeStatus(s.Status(c.resource)); got != c.after {
					t.Errorf("status of %s: %s, want %s", c.resource, got, c.after)
				}
			}
		})
	}
}

func withClient(cmd Command, client string) Command {
	cmd.ClientID = client
	return cmd
}

// waitGraph is the wait-for graph of s by client name, computed here from
// the queues as the spec in deadlock.go words it (not through the code it
// tests): live waiter -> conflicting holders and live entries ahead that
// conflict or are multi requests, self-edges left out.
func waitGraph(s *State) map[string]map[string]bool {
	g := make(map[string]map[string]bool)
	edge := func(from, to string) {
		if from == to {
			return
		}
		if g[from] == nil {
			g[from] = make(map[string]bool)
		}
		g[from][to] = true
	}
	now := s.clock.now
	for r := range s.resources.all() {
		if r.permits > 1 {
			continue // waits for any permit: no edges
		}
		q := r.queue()
		for i, w := range q {
			if w.deadline <= now {
				continue
			}
			c := s.clients.name(w.client)
			for j := range r.holderCount() {
				h := r.holderAt(j)
				if h.mode() == Exclusive || w.mode == Exclusive {
					edge(c, s.clients.name(h.client()))
				}
			}
			for _, a := range q[:i] {
				if a.deadline > now && (a.many != nil || a.mode == Exclusive || w.mode == Exclusive) {
					edge(c, s.clients.name(a.client))
				}
			}
		}
	}
	return g
}

// graphCycle finds any cycle in g (nil for none).
func graphCycle(g map[string]map[string]bool) []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var found []string
	var dfs func(u string) bool
	dfs = func(u string) bool {
		color[u] = grey
		stack = append(stack, u)
		for _, v := range slices.Sorted(mapKeys(g[u])) {
			switch color[v] {
			case grey:
				found = slices.Clone(stack[slices.Index(stack, v):])
				return true
			case white:
				if dfs(v) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[u] = black
		return false
	}
	for _, u := range slices.Sorted(mapKeys(g)) {
		if color[u] == white && dfs(u) {
			return found
		}
	}
	return nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestDeadlockProperties: goal — over random logs of waits, grants,
// releases, cancels and expiries by a few clients on a few resources (multi
// requests and shared modes included), (a) no group's wait-for graph ever
// holds a cycle, and (b) every Deadlock answer names a cycle whose every
// edge exists in the state it was decided in (the requester's own edge as
// its request would have had it). Method: the graph recomputed from the
// queues after every entry (waitGraph), against the answers.
func TestDeadlockProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := mustNew(t, DefaultConfig())
		clients := []string{"A", "B", "C", "D"}
		resources := []string{"r1", "r2", "r3"}
		type req struct {
			resource string
			id       LeaseID
		}
		var issued []req
		ms := int64(0)
		for i := 1; i <= 60; i++ {
			ms += rapid.Int64Range(0, 300).Draw(t, "dt")
			id := LeaseID{byte(i), 0xD}
			var cmd Command
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2, 3, 4:
				cmd = Command{Op: OpAcquire, Resource: rapid.SampledFrom(resources).Draw(t, "r"), ClientID: rapid.SampledFrom(clients).Draw(t, "c"),
					LeaseID: id, Mode: rapid.SampledFrom([]Mode{X, X, S}).Draw(t, "m"), TTLMs: rapid.Int64Range(200, 3000).Draw(t, "ttl"),
					WaitMs: rapid.Int64Range(0, 2000).Draw(t, "wait")}
			case 5:
				rs := rapid.SampledFrom([][]string{{"r1", "r2"}, {"r2", "r3"}, {"r3", "r1"}, {"r1", "r2", "r3"}}).Draw(t, "rs")
				cmd = Command{Op: OpAcquireMany, Resources: rs, ClientID: rapid.SampledFrom(clients).Draw(t, "c"),
					LeaseID: id, Mode: rapid.SampledFrom([]Mode{X, S}).Draw(t, "m"), TTLMs: 1000, WaitMs: rapid.Int64Range(1, 2000).Draw(t, "wait")}
			case 6, 7:
				if len(issued) == 0 {
					continue
				}
				r := rapid.SampledFrom(issued).Draw(t, "rel")
				cmd = Command{Op: OpRelease, Resource: r.resource, LeaseID: r.id}
			case 8:
				if len(issued) == 0 {
					continue
				}
				r := rapid.SampledFrom(issued).Draw(t, "cancel")
				cmd = Command{Op: OpCancel, Resource: r.resource, LeaseID: r.id}
			default:
				cmd = Command{Op: OpTick}
			}
			cmd.Mono = ms * 1e6
			res, _ := s.Apply(Entry{Index: uint64(i), Term: 1, Command: cmd})
			switch cmd.Op {
			case OpAcquire:
				issued = append(issued, req{cmd.Resource, id})
			case OpAcquireMany:
				for j, r := range cmd.Resources {
					issued = append(issued, req{r, ManyLeaseID(id, j)})
				}
			}
			checkWaitIndex(t, s, fmt.Sprintf("entry %d", i))
			g := waitGraph(s)
			if c := graphCycle(g); c != nil {
				t.Fatalf("entry %d (%v by %s): the wait-for graph holds cycle %v", i, cmd.Op, cmd.ClientID, c)
			}
			if res.Code != Deadlock {
				continue
			}
			cy := res.Cycle
			if len(cy) < 2 || cy[0] != cmd.ClientID {
				t.Fatalf("entry %d: cycle %v does not start with the requester %s", i, cy, cmd.ClientID)
			}
			// The requester's edge: a conflicting holder or any entry
			// conflicting or multi in the queues it would have entered.
			names := cmd.Resources
			if cmd.Op == OpAcquire {
				names = []string{cmd.Resource}
			}
			first := false
			for _, name := range names {
				if r := s.resources.find(name); r != nil {
					s.blockers(r, len(r.queue()), cmd.Mode, func(slot uint32) { first = first || s.clients.name(slot) == cy[1] })
				}
			}
			if !first {
				t.Fatalf("entry %d: cycle %v: %s would not wait for %s", i, cy, cy[0], cy[1])
			}
			for k := 1; k < len(cy); k++ {
				if to := cy[(k+1)%len(cy)]; !g[cy[k]][to] {
					t.Fatalf("entry %d: cycle %v: no edge %s -> %s in %v", i, cy, cy[k], to, g)
				}
			}
		}
	})
}

// TestWaitEdgesAndBreakCycle: goal — a group lists its wait-for edges by
// lease, and a deadlock cancel removes the waiter it names (answering it
// with a cancel event marked Deadlock) only while it still waits for the
// client the detector saw it wait for; otherwise it changes nothing.
// Method: one holder, one waiter; edges read back; cancels that must not
// act, then one that must; a multi request's parts go together.
func TestWaitEdgesAndBreakCycle(t *testing.T) {
	s := mustNew(t, DefaultConfig())
	applyAt(s, 1, 0, acqBy("x", 'a', 'A', X, 0))
	applyAt(s, 2, 0, acqBy("x", 'b', 'B', X, 5000))
	applyAt(s, 3, 0, withClient(many('m', X, 10_000, 5000, "x", "z"), "client-C"))
	want := []WaitEdge{
		{Resource: "x", Waiter: lid('b'), Client: "client-B", Blocker: lid('a'), BlockerClient: "client-A"},
		{Resource: "x", Resources: []string{"x", "z"}, Waiter: lid('m'), Client: "client-C", Blocker: lid('a'), BlockerClient: "client-A"},
		{Resource: "x", Resources: []string{"x", "z"}, Waiter: lid('m'), Client: "client-C", Blocker: lid('b'), BlockerClient: "client-B"},
	}
	if got := s.WaitEdges(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("edges\n got  %v\n want %v", got, want)
	}
	breakOne := func(i uint64, cmd Command) (Result, []Event) {
		cmd.Op, cmd.Deadlock = OpCancel, true
		res, evs := s.Apply(Entry{Index: i, Term: 1, Command: cmd})
		return res, slices.Clone(evs)
	}
	if res, evs := breakOne(4, Command{Resource: "x", LeaseID: lid('b'), ClientID: "client-C"}); res.Position != 0 || len(evs) != 0 {
		t.Fatalf("cancel of a waiter that does not wait for the named client: %+v %v", res, describeEvents(evs))
	}
	res, evs := breakOne(5, Command{Resource: "x", LeaseID: lid('b'), ClientID: "client-A"})
	if res.Position != 1 || len(evs) != 1 || evs[0].Kind != EventCancel || !evs[0].Deadlock || evs[0].Lease.ID != lid('b') {
		t.Fatalf("deadlock cancel: %+v %v", res, evs)
	}
	if res, _ := breakOne(6, Command{Resource: "x", LeaseID: lid('b')}); res.Position != 0 {
		t.Fatalf("second cancel of the same waiter: %+v", res)
	}
	res, evs = breakOne(7, Command{Resources: []string{"x", "z"}, LeaseID: lid('m'), ClientID: "client-A"})
	if res.Position != 1 || len(evs) != 3 || !evs[0].Deadlock || !evs[1].Deadlock || evs[2].Kind != EventFreed {
		t.Fatalf("deadlock cancel of a multi request: %+v %v", res, evs)
	}
	if got := s.WaitEdges(); len(got) != 0 {
		t.Fatalf("edges left: %v", got)
	}
	checkCounters(t, s, "after the cancels")
}

// checkWaitIndex requires the deadlock search's index of queue entries by
// client to be what the queues hold, here and after a snapshot round trip.
func checkWaitIndex(t fataler, s *State, after string) {
	t.Helper()
	for _, st := range []*State{s, restored(t, s)} {
		want := make(waitIndex)
		for r := range st.resources.all() {
			for _, w := range r.queue() {
				want.add(w.client, r.name, 1)
			}
		}
		got := make(map[string]map[string]int)
		for slot, rs := range st.waitingOn {
			got[st.clients.name(slot)] = rs
		}
		wantByName := make(map[string]map[string]int)
		for slot, rs := range want {
			wantByName[st.clients.name(slot)] = rs
		}
		if fmt.Sprint(got) != fmt.Sprint(wantByName) {
			t.Fatalf("%s: wait index %v, queues hold %v", after, got, wantByName)
		}
	}
}

func restored(t fataler, s *State) *State {
	t.Helper()
	fresh := mustNew(t, s.Config())
	if err := fresh.Restore(s.Snapshot()); err != nil {
		t.Fatalf("restore: %v", err)
	}
	return fresh
}
