package lock

import (
	"slices"
)

// The reference model's deadlock check (deadlock.go states the rule): a
// plain breadth-first search over edges recomputed from the queues, in the
// order the state machine visits them (resources by name, holders in grant
// order, then the queue), so both report the same shortest cycle.

// refBlockers lists the clients a request of mode m standing behind the
// first ahead entries of r's queue waits for.
func (m *refModel) refBlockers(r *refResource, ahead int, mode Mode) []string {
	if r.permits > 1 {
		return nil // a semaphore's waiter waits for any permit: no edges
	}
	var out []string
	for _, h := range r.holders {
		if h.Mode == Exclusive || mode == Exclusive {
			out = append(out, h.ClientID)
		}
	}
	for _, w := range r.queue[:ahead] {
		if w.deadline() > m.now && (w.mode == Exclusive || mode == Exclusive) {
			out = append(out, w.client)
		}
	}
	return out
}

// refWaitsFor lists the clients client waits for.
func (m *refModel) refWaitsFor(client string) []string {
	var names []string
	for name, r := range m.res {
		if slices.ContainsFunc(r.queue, func(w refWaiter) bool { return w.client == client }) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out []string
	for _, name := range names {
		r := m.res[name]
		for i, w := range r.queue {
			if w.client == client && w.deadline() > m.now {
				out = append(out, m.refBlockers(r, i, w.mode)...)
			}
		}
	}
	return out
}

// refCycle is the cycle client closes by waiting in mode on name behind
// its first ahead entries, or nil.
func (m *refModel) refCycle(client string, mode Mode, name string, ahead int) []string {
	parent := map[string]string{}
	var frontier []string
	step := func(from string, tos []string) (string, bool) {
		for _, to := range tos {
			switch {
			case to == from:
			case to == client:
				return from, true
			case parent[to] == "":
				parent[to] = from
				frontier = append(frontier, to)
			}
		}
		return "", false
	}
	end, found := step(client, m.refBlockers(m.res[name], ahead, mode))
	for len(frontier) > 0 && !found {
		u := frontier[0]
		frontier = frontier[1:]
		end, found = step(u, m.refWaitsFor(u))
	}
	if !found {
		return nil
	}
	path := []string{}
	for u := end; u != client; u = parent[u] {
		path = append(path, u)
	}
	path = append(path, client)
	slices.Reverse(path)
	return path
}

// refRevived is the cycle a retry with a wait closes by reviving queued
// request q (entry i of name's queue) whose wait had elapsed, or nil.
func (m *refModel) refRevived(name string, i int, c *Command) []string {
	q := m.res[name].queue[i]
	if c.WaitMs == 0 || q.deadline() > m.now {
		return nil
	}
	return m.refCycle(q.client, q.mode, name, i)
}
