package lock

import "slices"

// Deadlock detection inside one group (issue 31). The wait-for graph has
// one node per client id (a client that holds A and waits for B is one
// node) and is derived from the state, never stored: a live queued request
// of client c on resource r (its deadline not yet passed) gives the edges
//
//	c -> each holder of r whose mode conflicts with the request's, and
//	c -> each live request ahead of it in r's queue that conflicts with it
//	     or is a multi request,
//
// leaving out c itself. Those are exactly the requests FIFO must see leave
// before c's can be granted: a shared request behind another shared one is
// granted with it, while a multi request heading a queue blocks it whatever
// the modes (many.go). Counting the requests ahead, not only the holders,
// matters twice: a queue headed by a multi request may have no holder at
// all, and with them a grant never adds an edge (the new holder was ahead
// of every request that now waits for it), so edges appear only when a
// request enters a queue, and checking there keeps every group's graph
// acyclic. A request leaving a queue, a holder leaving, or a wait elapsing
// removes its edges in the entry that does it.
//
// A client asking again for a resource it holds waits as it always did
// (behind itself, until its lease ends): self-edges are no cycle. It is
// refused only when another client waits for it in a cycle.

// waitIndex counts, per client slot, that client's queue entries on each
// resource, so the search visits only the queues a client waits in. It is
// derived from the queues (kept by pushWaiter and takeWaiter, which a
// restore also goes through), so snapshots do not carry it.
type waitIndex map[uint32]map[string]int

func (x waitIndex) add(slot uint32, resource string, delta int) {
	m := x[slot]
	if m == nil {
		m = make(map[string]int)
		x[slot] = m
	}
	if m[resource] += delta; m[resource] <= 0 {
		delete(m, resource)
		if len(m) == 0 {
			delete(x, slot)
		}
	}
}

// conflicts reports whether a request in mode a and one in mode b cannot
// hold one resource together.
func conflicts(a, b Mode) bool { return a == Exclusive || b == Exclusive }

// blockers calls fn with the client slot of each holder of r and each live
// queue entry among r's first ahead that a request of mode m in r's queue
// waits for (see above), client included: the caller leaves out its own.
func (s *State) blockers(r *resource, ahead int, m Mode, fn func(slot uint32)) {
	s.blockingLeases(r, ahead, m, func(slot uint32, _ LeaseID) { fn(slot) })
}

// blockingLeases is blockers with the lease id of each holder or queue
// entry.
//
// A queued request on a semaphore (semaphore.go) waits for any one permit
// to free, not for every holder: a cycle through one of its holders is no
// deadlock while another holder may leave. Such waits give no edges, so
// the detection never counts them (a deadlock through a semaphore is not
// detected; its waits end when they elapse).
func (s *State) blockingLeases(r *resource, ahead int, m Mode, fn func(slot uint32, id LeaseID)) {
	if r.semaphore() {
		return
	}
	for i := range r.holderCount() {
		if h := r.holderAt(i); conflicts(h.mode(), m) {
			fn(h.client(), h.id)
		}
	}
	for _, w := range r.queue()[:ahead] {
		if w.deadline > s.clock.now && (w.many != nil || conflicts(w.mode, m)) {
			fn(w.client, w.id)
		}
	}
}

// waitsFor calls fn with every client slot slot waits for, in an order
// every replica shares (resources by name, then holder and queue order).
func (s *State) waitsFor(slot uint32, fn func(uint32)) {
	names := make([]string, 0, len(s.waitingOn[slot]))
	for name := range s.waitingOn[slot] {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		r := s.resources.find(name)
		if r == nil {
			continue
		}
		for i, w := range r.queue() {
			if w.client == slot && w.deadline > s.clock.now {
				s.blockers(r, i, w.mode, fn)
			}
		}
	}
}

// deadlockCycle returns the wait-for cycle a new request of client in mode
// m, entering the tail of the queues of resources (those that exist),
// would close: client first, then each client the one before waits for.
// Nil when it closes none.
func (s *State) deadlockCycle(client string, m Mode, resources []string) []string {
	return s.cycleThrough(client, m, resources, func(r *resource) int { return len(r.queue()) })
}

// cycleThrough is deadlockCycle for a request that stands, on each
// resource r, behind the first ahead(r) entries of r's queue. The search
// is breadth-first from the clients the request would wait for, so the
// cycle reported is a shortest one; it visits each client at most once.
func (s *State) cycleThrough(client string, m Mode, resources []string, ahead func(*resource) int) []string {
	if s.missesDeadlocks() {
		return nil
	}
	self, ok := s.clients.index[client]
	if !ok {
		return nil // holds and waits for nothing, so nobody waits for it
	}
	parent := make(map[uint32]uint32)
	var frontier []uint32
	found, end := false, uint32(0)
	visit := func(from uint32) func(uint32) {
		return func(to uint32) {
			if found || to == from {
				return
			}
			if to == self {
				found, end = true, from
				return
			}
			if _, seen := parent[to]; !seen {
				parent[to] = from
				frontier = append(frontier, to)
			}
		}
	}
	for _, name := range resources {
		if r := s.resources.find(name); r != nil {
			s.blockers(r, ahead(r), m, visit(self))
		}
	}
	for len(frontier) > 0 && !found {
		u := frontier[0]
		frontier = frontier[1:]
		s.waitsFor(u, visit(u))
	}
	if !found {
		return nil
	}
	var path []string
	for u := end; u != self; u = parent[u] {
		path = append(path, s.clients.name(u))
	}
	path = append(path, client)
	slices.Reverse(path)
	return path
}

// revivedCycle is the cycle a retry with a wait closes by joining queued
// request w (a part of it on multi requests) on r, whose wait had elapsed
// (it stays queued until promote drops it): its edges come back with it,
// so the retry is judged as the request entering where it stands. Nil
// when w is live or closes no cycle.
func (s *State) revivedCycle(r *resource, w *waiter, cmd *Command) []string {
	if cmd.WaitMs == 0 || w.deadline > s.clock.now {
		return nil
	}
	client := s.clients.name(w.client)
	if w.many == nil {
		return s.cycleThrough(client, w.mode, []string{r.name}, func(q *resource) int { return q.findWaiter(w.id) })
	}
	m := w.many
	return s.cycleThrough(client, w.mode, m.resources, func(q *resource) int {
		return q.findWaiter(ManyLeaseID(m.base, slices.Index(m.resources, q.name)))
	})
}

// Cycles across groups (issue 31) are found outside the state machine,
// from every group's edges (WaitEdges), and broken by an OpCancel with
// Command.Deadlock naming one waiter of the cycle (breakCycle).

// WaitEdge is one edge of a group's wait-for graph, by lease: the queued
// request Waiter of Client waits for the holder or queued request Blocker
// of BlockerClient. An edge by lease, once gone, does not come back (lease
// ids are never reused; a request leaves a queue for good), so an edge
// seen in two reads existed all the time between them.
type WaitEdge struct {
	// Resource is where a single request waits; for a multi request it is
	// one of Resources, which lists all of them in request order (a cancel
	// names those), and Waiter is the request's lease id.
	Resource      string
	Resources     []string
	Waiter        LeaseID
	Client        string
	Blocker       LeaseID
	BlockerClient string
}

// WaitEdges lists the group's wait-for edges between different clients,
// in an order every replica shares. It visits the queues of the clients
// that wait only.
func (s *State) WaitEdges() []WaitEdge {
	var out []WaitEdge
	var names []string
	for _, rs := range s.waitingOn {
		for name := range rs {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	for _, name := range names {
		r := s.resources.find(name)
		if r == nil {
			continue
		}
		for i, w := range r.queue() {
			if w.deadline <= s.clock.now {
				continue
			}
			e := WaitEdge{Resource: name, Waiter: w.id, Client: s.clients.name(w.client)}
			if w.many != nil {
				e.Resources, e.Waiter = w.many.resources, w.many.base
			}
			s.blockingLeases(r, i, w.mode, func(slot uint32, id LeaseID) {
				if slot != w.client {
					e.Blocker, e.BlockerClient = id, s.clients.name(slot)
					out = append(out, e)
				}
			})
		}
	}
	return out
}

// breakCycle is an OpCancel with Command.Deadlock: a detector found the
// queued request LeaseID (on Resource, or a multi request on Resources)
// in a wait-for cycle across groups. It removes the request, answering its
// waiting callers Deadlock (its cancel events carry Event.Deadlock), only
// if it still waits and, when ClientID is set, still waits for that client
// (the next in the cycle): a cycle that broke meanwhile costs nobody a
// wait. Result.Position is its place (furthest back) when it was removed;
// zero when nothing was done.
func (s *State) breakCycle(index uint64, cmd *Command) Result {
	name := cmd.Resource
	if len(cmd.Resources) > 0 {
		name = cmd.Resources[0]
	}
	r := s.resources.find(name)
	if r == nil {
		return Result{}
	}
	i := r.findWaiter(cmd.LeaseID)
	if i < 0 || (len(cmd.Resources) > 0) != (r.queue()[i].many != nil) {
		return Result{}
	}
	w := &r.queue()[i]
	if w.deadline <= s.clock.now {
		return Result{}
	}
	if cmd.ClientID != "" && !s.stillWaitsFor(r, i, cmd.ClientID) {
		return Result{}
	}
	pos := i + 1
	if w.many != nil {
		pos = s.position(w.many)
	}
	mark := len(s.events)
	s.dropWaiter(index, r, i)
	for k := mark; k < len(s.events); k++ {
		if ev := &s.events[k]; ev.Kind == EventCancel && (ev.Lease.ID == cmd.LeaseID || ev.Many == cmd.LeaseID) {
			ev.Deadlock = true
		}
	}
	s.settle(index, r)
	return Result{Position: pos}
}

// stillWaitsFor reports whether queue entry i of r (every part, for a
// multi request) waits for client.
func (s *State) stillWaitsFor(r *resource, i int, client string) bool {
	slot, ok := s.clients.index[client]
	if !ok {
		return false
	}
	found := false
	check := func(q *resource, j int) {
		s.blockers(q, j, q.queue()[j].mode, func(b uint32) { found = found || b == slot })
	}
	if m := r.queue()[i].many; m != nil {
		s.eachPart(m, check)
	} else {
		check(r, i)
	}
	return found
}
