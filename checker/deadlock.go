package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstep/lockstep/models"
)

// CheckDeadlock names the check of in-group deadlock detection (issue 31),
// judged on the committed trace with each group's wait-for graph rebuilt
// from it (the rule of core/lock/deadlock.go: a live queued request's
// client waits for the clients of the conflicting holders of its resource
// and of the live entries ahead of it that conflict or are multi requests;
// self-edges left out):
//
//   - no false positive: an acquire answered deadlock names a cycle that
//     started with its own client and whose every edge existed in the state
//     one committed attempt of it was refused in (the requester's own edge
//     as its request would have had it);
//   - no cycle left standing: a wait-for cycle inside one group that stands
//     longer than the bound (Options.DeadlockBound, log time) is a cycle
//     the state machine let form and did not break.
const CheckDeadlock = "deadlock"

// dlEntry is a holder or queued request as the trace shows it.
type dlEntry struct {
	lease, client string
	exclusive     bool
	many          bool
	deadline      int64 // queued requests only
}

type dlResource struct {
	holders, queue []dlEntry
	// semaphore: a grant named more than one permit (TraceEvent.Permits);
	// a wait there is for any permit, so it gives no edges.
	semaphore bool
}

// dlGroup is one group's holders and queues, rebuilt event by event.
type dlGroup struct {
	res map[string]*dlResource
	now int64
}

func (g *dlGroup) resource(name string) *dlResource {
	r := g.res[name]
	if r == nil {
		r = &dlResource{}
		g.res[name] = r
	}
	return r
}

func dropLease(list []dlEntry, lease string) []dlEntry {
	return slices.DeleteFunc(list, func(e dlEntry) bool { return e.lease == lease })
}

// apply follows one committed event.
func (g *dlGroup) apply(ev TraceEvent) {
	g.now = max(g.now, ev.LogTime)
	r := g.resource(ev.Resource)
	switch ev.Kind {
	case KindEnqueue:
		r.queue = append(r.queue, dlEntry{lease: ev.LeaseID, client: ev.Client, exclusive: isExclusive(ev.Mode),
			many: ev.Many != "", deadline: ev.ExpiresAt})
	case KindJoin:
		for i := range r.queue {
			if r.queue[i].lease == ev.LeaseID {
				r.queue[i].deadline = max(r.queue[i].deadline, ev.ExpiresAt)
			}
		}
	case KindGrant:
		r.queue = dropLease(r.queue, ev.LeaseID)
		r.holders = append(r.holders, dlEntry{lease: ev.LeaseID, client: ev.Client, exclusive: isExclusive(ev.Mode)})
		r.semaphore = ev.Permits > 1
	case KindRelease, KindExpire:
		r.holders = dropLease(r.holders, ev.LeaseID)
	case KindCancel:
		r.queue = dropLease(r.queue, ev.LeaseID)
	}
	if len(r.holders) == 0 && len(r.queue) == 0 {
		delete(g.res, ev.Resource) // forgotten, as the state machine forgets it (and its N)
	}
}

// blockers calls fn with the client of every holder of r and live entry
// among its first ahead that a request (exclusive or not) there waits for.
func (g *dlGroup) blockers(r *dlResource, ahead int, exclusive bool, fn func(client string)) {
	if r.semaphore {
		return
	}
	for _, h := range r.holders {
		if h.exclusive || exclusive {
			fn(h.client)
		}
	}
	for _, w := range r.queue[:ahead] {
		if w.deadline > g.now && (w.many || w.exclusive || exclusive) {
			fn(w.client)
		}
	}
}

// graph is the group's wait-for graph by client.
func (g *dlGroup) graph() map[string]map[string]bool {
	out := make(map[string]map[string]bool)
	for _, r := range g.res {
		for i, w := range r.queue {
			if w.deadline <= g.now {
				continue
			}
			g.blockers(r, i, w.exclusive, func(to string) {
				if to == w.client {
					return
				}
				if out[w.client] == nil {
					out[w.client] = make(map[string]bool)
				}
				out[w.client][to] = true
			})
		}
	}
	return out
}

// findCycle returns a cycle of graph, nil for none.
func findCycle(graph map[string]map[string]bool) []string {
	state := make(map[string]int) // 0 new, 1 on the path, 2 done
	var path, found []string
	var visit func(u string) bool
	visit = func(u string) bool {
		state[u] = 1
		path = append(path, u)
		for _, v := range sortedKeys(graph[u]) {
			switch state[v] {
			case 1:
				found = slices.Clone(path[slices.Index(path, v):])
				return true
			case 0:
				if visit(v) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		state[u] = 2
		return false
	}
	for _, u := range sortedKeys(graph) {
		if state[u] == 0 && visit(u) {
			return found
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// refusal is one acquire answered deadlock, with the committed attempts
// it may have been refused at.
type refusal struct {
	op       Op
	judged   bool
	firstErr string
}

// explains reports why cycle did not exist for op in g's present state
// ("" when every edge did).
func (g *dlGroup) explains(in models.LockInput, cycle []string) string {
	names := in.Resources
	if in.Op == models.Acquire {
		names = []string{in.Resource}
	}
	first := false
	for _, name := range names {
		if r := g.res[name]; r != nil {
			g.blockers(r, len(r.queue), isExclusive(in.Mode), func(c string) { first = first || c == cycle[1] })
		}
	}
	if !first {
		return fmt.Sprintf("%s would not have waited for %s", cycle[0], cycle[1])
	}
	graph := g.graph()
	for k := 1; k < len(cycle); k++ {
		if to := cycle[(k+1)%len(cycle)]; !graph[cycle[k]][to] {
			return fmt.Sprintf("%s did not wait for %s", cycle[k], to)
		}
	}
	return ""
}

// checkDeadlock runs both halves of CheckDeadlock and returns how many
// deadlock answers it judged.
func checkDeadlock(h *History, trace []TraceEvent, opts Options, f *findings) int {
	type key struct {
		group int
		index uint64
		slot  int
	}
	// Each deadlock answer, at the committed acquires of its (client,
	// request id) that changed nothing for their own lease id.
	attempts := make(map[key][]*refusal)
	var refusals []*refusal
	touched := make(map[key]map[string]bool) // lease ids an entry's events name
	brokenLeases := make(map[string]bool)    // requests a detector's cancel removed
	for _, ev := range trace {
		if ev.Kind == KindCancel && ev.Deadlock {
			brokenLeases[ev.LeaseID] = true
			if ev.Many != "" {
				brokenLeases[ev.Many] = true
			}
		}
		k := key{ev.Group, ev.Index, ev.Slot}
		if touched[k] == nil {
			touched[k] = make(map[string]bool)
		}
		touched[k][ev.LeaseID] = true
	}
	for _, op := range h.Ops {
		in, out := op.Input, op.Output
		if out.Unknown || out.Code != models.CodeDeadlock {
			continue
		}
		r := &refusal{op: op}
		refusals = append(refusals, r)
		if len(out.Cycle) == 0 {
			// The cross-shard detector removed the request (its answer
			// names no cycle): a cancel marked Deadlock must have, and
			// checkCrossDeadlock judges that cancel.
			r.judged = judgeRemoved(h, op, brokenLeases, f)
			continue
		}
		if len(out.Cycle) < 2 || out.Cycle[0] != in.ClientID || slices.Contains(out.Cycle[1:], in.ClientID) {
			f.add(Violation{Check: CheckDeadlock, Resource: in.Resource, At: op.Return,
				Message: fmt.Sprintf("%s's acquire of %q answered deadlock with cycle %v, which does not start with it (once)", in.ClientID, in.Resource, out.Cycle)})
			r.judged = true
			continue
		}
		for _, c := range h.Commands {
			if c.Op == CommandAcquire && c.Client == in.ClientID && in.RequestID != "" && c.RequestID == in.RequestID {
				k := key{c.Group, c.Index, c.Slot}
				if !touched[k][c.LeaseID] {
					attempts[k] = append(attempts[k], r)
				}
			}
		}
	}
	logTimes := make(map[key]int64)
	for _, e := range h.Entries {
		logTimes[key{e.Group, e.Index, 0}] = e.LogTime
	}

	groups := make(map[int]*dlGroup)
	type standing struct {
		cycle []string
		since int64
		index uint64
	}
	stands := make(map[int]*standing)
	judgeEnd := func(group int, s *standing, now int64, still bool) {
		if opts.DeadlockBound <= 0 || now-s.since <= int64(opts.DeadlockBound) {
			return
		}
		how := "until log time " + fmtNs(now)
		if still {
			how = "to the end of the run"
		}
		f.add(Violation{Check: CheckDeadlock, Index: s.index,
			Message: fmt.Sprintf("group %d: wait-for cycle %s stood from log time %s %s (%s > bound %s): a cycle inside one group must be refused as it forms",
				group+1, strings.Join(append(slices.Clone(s.cycle), s.cycle[0]), " -> "), fmtNs(s.since), how, fmtNs(now-s.since), opts.DeadlockBound)})
	}
	for _, e := range committedEntries(h, trace) {
		g := groups[e.group]
		if g == nil {
			g = &dlGroup{res: make(map[string]*dlResource)}
			groups[e.group] = g
		}
		if t, ok := logTimes[key{e.group, e.index, 0}]; ok {
			g.now = max(g.now, t)
		}
		for _, ev := range e.events {
			g.apply(ev)
		}
		for _, r := range attempts[key{e.group, e.index, e.slot}] {
			if r.judged {
				continue
			}
			why := g.explains(r.op.Input, r.op.Output.Cycle)
			if why == "" {
				r.judged = true
			} else if r.firstErr == "" {
				r.firstErr = fmt.Sprintf("at group %d index %d: %s", e.group+1, e.index, why)
			}
		}
		if len(e.events) == 0 {
			continue
		}
		cycle := findCycle(g.graph())
		s := stands[e.group]
		switch {
		case cycle != nil && s == nil:
			stands[e.group] = &standing{cycle: cycle, since: g.now, index: e.index}
		case cycle == nil && s != nil:
			judgeEnd(e.group, s, g.now, false)
			delete(stands, e.group)
		}
	}
	for group, s := range stands {
		judgeEnd(group, s, groups[group].now, true)
	}
	if opts.CrossDeadlockBound > 0 {
		checkCrossDeadlock(h, trace, opts.CrossDeadlockBound, f)
	}
	judged := 0
	for _, r := range refusals {
		in := r.op.Input
		switch {
		case r.judged:
			judged++
		case r.firstErr != "":
			judged++
			f.add(Violation{Check: CheckDeadlock, Resource: in.Resource, At: r.op.Return,
				Message: fmt.Sprintf("%s's acquire of %q (request %s) answered deadlock with cycle %v, a cycle that did not exist where it was refused (%s)",
					in.ClientID, in.Resource, in.RequestID, r.op.Output.Cycle, r.firstErr)})
		}
		// Otherwise no committed attempt was found (no request id, a
		// multi request, or commands not recorded): nothing to judge.
	}
	return judged
}

// checkCrossDeadlock judges the cross-shard detector on the union of every
// group's wait-for graph, the groups' entries merged in the order their
// first replica applied them (virtual time, Entry.At):
//
//   - a request the detector removed (a cancel event marked Deadlock) was
//     of a client that stood on a cycle of the union graph at most a third
//     of the bound before the cancel (the detector cancels once it has
//     confirmed a cycle, and the cancel checks the edge again);
//   - no client stands on a cycle of the union graph longer than the bound,
//     unless a fault was active (or had ended less than the bound before)
//     during that time: the detector reads every group, so a fault may
//     hold it up.
func checkCrossDeadlock(h *History, trace []TraceEvent, bound time.Duration, f *findings) {
	type gi struct {
		group int
		index uint64
	}
	at := make(map[gi]int64, len(h.Entries))
	logTime := make(map[gi]int64, len(h.Entries))
	for _, e := range h.Entries {
		at[gi{e.Group, e.Index}] = e.At
		logTime[gi{e.Group, e.Index}] = e.LogTime
	}
	entries := committedEntries(h, trace)
	slices.SortStableFunc(entries, func(a, b committedEntry) int {
		return cmp.Compare(at[gi{a.group, a.index}], at[gi{b.group, b.index}])
	})
	faulted := func(from, to int64) bool {
		for _, ft := range h.Faults {
			if ft.Start <= to && from <= ft.End+int64(bound) {
				return true
			}
		}
		return false
	}
	groups := make(map[int]*dlGroup)
	since := make(map[string]int64)  // client -> on a cycle since
	lastOn := make(map[string]int64) // client -> last seen on a cycle
	// on: the clients on a cycle as of the last entry that changed a queue.
	var on map[string]bool
	for _, e := range entries {
		now := at[gi{e.group, e.index}]
		g := groups[e.group]
		if g == nil {
			g = &dlGroup{res: make(map[string]*dlResource)}
			groups[e.group] = g
		}
		if t, ok := logTime[gi{e.group, e.index}]; ok {
			g.now = max(g.now, t)
		}
		for _, ev := range e.events {
			if ev.Kind == KindCancel && ev.Deadlock {
				// On a cycle still (no event since it was seen on one), or
				// until shortly before.
				if t, ok := lastOn[ev.Client]; !on[ev.Client] && (!ok || now-t > int64(bound)/3) {
					f.add(Violation{Check: CheckDeadlock, Resource: ev.Resource, LeaseIDs: []string{ev.LeaseID}, Index: ev.Index, At: now,
						Message: fmt.Sprintf("group %d index %d removed %s's queued request %s on %q to break a deadlock, but %s stood on no wait-for cycle across groups in the %s before",
							e.group, ev.Index, ev.Client, ev.LeaseID, ev.Resource, ev.Client, bound/3)})
				}
			}
			g.apply(ev)
		}
		if len(e.events) == 0 {
			continue
		}
		union := make(map[string]map[string]bool)
		for _, gr := range groups {
			for from, tos := range gr.graph() {
				if union[from] == nil {
					union[from] = make(map[string]bool)
				}
				for to := range tos {
					union[from][to] = true
				}
			}
		}
		on = onCycles(union)
		for c := range on {
			lastOn[c] = now
			if _, ok := since[c]; !ok {
				since[c] = now
			}
		}
		for _, c := range sortedKeys(since) {
			if on[c] {
				continue
			}
			if from := since[c]; now-from > int64(bound) && !faulted(from, now) {
				f.add(Violation{Check: CheckDeadlock, At: from,
					Message: fmt.Sprintf("%s stood on a wait-for cycle across groups from %s to %s (%s > bound %s) with no fault active: the detector did not break it",
						c, fmtNs(from), fmtNs(now), fmtNs(now-from), bound)})
			}
			delete(since, c)
		}
	}
}

// onCycles lists the clients that stand on a cycle of graph.
func onCycles(graph map[string]map[string]bool) map[string]bool {
	on := make(map[string]bool)
	for start := range graph {
		seen := map[string]bool{}
		stack := []string{start}
		for len(stack) > 0 && !on[start] {
			u := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for v := range graph[u] {
				if v == start {
					on[start] = true
					break
				}
				if !seen[v] {
					seen[v] = true
					stack = append(stack, v)
				}
			}
		}
	}
	return on
}

// judgeRemoved requires of a deadlock answer without a cycle that a
// detector's cancel removed a queued request of its (client, request id);
// it reports whether it could judge (the commands name the request).
func judgeRemoved(h *History, op Op, broken map[string]bool, f *findings) bool {
	in := op.Input
	named := false
	for _, c := range h.Commands {
		if c.Op != CommandAcquire || c.Client != in.ClientID || in.RequestID == "" || c.RequestID != in.RequestID {
			continue
		}
		named = true
		if broken[c.LeaseID] {
			return true
		}
	}
	if named {
		f.add(Violation{Check: CheckDeadlock, Resource: in.Resource, At: op.Return,
			Message: fmt.Sprintf("%s's acquire of %q (request %s) answered deadlock without a cycle, but no detector's cancel removed its request",
				in.ClientID, in.Resource, in.RequestID)})
	}
	return named
}
