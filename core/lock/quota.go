package lock

import "strings"

// NamespaceSeparator ends a resource's namespace: "orders:42" is in
// namespace "orders", a name without one is in namespace "". It is fixed,
// not configured, because every replica must count usage alike.
const NamespaceSeparator = ':'

// Namespace returns the namespace of resource: its prefix up to the first
// NamespaceSeparator, or "" when it has none.
func Namespace(resource string) string {
	if i := strings.IndexByte(resource, NamespaceSeparator); i >= 0 {
		return resource[:i]
	}
	return ""
}

// Quota is the limit the proposer stamps into an acquire, for the
// namespace of its resource(s) and the caller's client id within it. The
// state machine refuses (QuotaExceeded, nothing changed) an acquire that
// would take the namespace's or the client's count past a limit, so the
// counts stay exact however many acquires race. Zero fields set no limit.
// Counts are per state machine, that is per lock shard.
type Quota struct {
	// Held bounds the namespace's leases, counting queue entries as the
	// leases they wait for; Queued bounds its queue entries (a multi
	// request has one per resource).
	Held, Queued uint32
	// ClientHeld and ClientQueued bound one client id's within the
	// namespace.
	ClientHeld, ClientQueued uint32
}

// IsZero reports whether q sets no limit.
func (q Quota) IsZero() bool { return q == Quota{} }

// usageKey names a namespace, or with client set one client's share of it.
type usageKey struct {
	namespace, client string
}

// usage counts leases and queue entries.
type usage struct {
	held, queued uint32
}

// usageTable keeps the counts Quota limits, moved by every grant, drop,
// enqueue and dequeue (grant, dropHolder, pushWaiter, takeWaiter). A
// state machine starts counting (from a recount of its table) at the
// first acquire that carries a quota, so a cluster without quotas pays
// nothing; nil means not counting. Snapshots do not store the counts: a
// restored state counts again from the next quota it meets. Results never
// depend on when counting started, only on the table.
type usageTable map[usageKey]usage

func (t usageTable) add(resource, client string, held, queued int) {
	if t == nil {
		return
	}
	ns := Namespace(resource)
	for _, k := range [2]usageKey{{namespace: ns}, {namespace: ns, client: client}} {
		u := t[k]
		u.held = uint32(int(u.held) + held)
		u.queued = uint32(int(u.queued) + queued)
		if u == (usage{}) {
			delete(t, k)
		} else {
			t[k] = u
		}
	}
}

// The limits of a Quota, as a QuotaExceeded result names the one it hit
// (in Result.Blocked), so that the refusal can say which quota it was.
const (
	LimitHeld         = "held"
	LimitQueued       = "queued"
	LimitClientHeld   = "client_held"
	LimitClientQueued = "client_queued"
)

// exceeds names the first limit of q that n more leases (held) or queue
// entries (!held) in namespace ns for client would pass, or "" when they
// fit. A queue entry also counts against the held limits, as the lease it
// waits for: granting a waiter later (on another command, with no quota
// to check) then never takes the held count past the limit in force when
// it queued.
func (t usageTable) exceeds(q Quota, ns, client string, n int, held bool) string {
	all, mine := t[usageKey{namespace: ns}], t[usageKey{namespace: ns, client: client}]
	switch {
	case !fits(all.held+all.queued, n, q.Held):
		return LimitHeld
	case !fits(mine.held+mine.queued, n, q.ClientHeld):
		return LimitClientHeld
	case held:
		return ""
	case !fits(all.queued, n, q.Queued):
		return LimitQueued
	case !fits(mine.queued, n, q.ClientQueued):
		return LimitClientQueued
	}
	return ""
}

func fits(count uint32, n int, limit uint32) bool {
	return limit == 0 || uint64(count)+uint64(n) <= uint64(limit)
}

// exceedsAll is exceeds for the resources of one request, counted per
// namespace (a multi request may span several).
func (s *State) exceedsAll(q Quota, resources []string, client string, held bool) string {
	if q.IsZero() {
		return ""
	}
	t := s.counted()
	per := map[string]int{}
	for _, name := range resources {
		per[Namespace(name)]++
	}
	for _, name := range resources {
		ns := Namespace(name)
		if limit := t.exceeds(q, ns, client, per[ns], held); limit != "" {
			return limit
		}
	}
	return ""
}

// counted returns the usage table, counting the lock table first if
// this state machine was not counting yet.
func (s *State) counted() usageTable {
	if s.usage == nil {
		s.usage = s.recount()
	}
	return s.usage
}

// recount counts leases and queue entries from the lock table itself.
func (s *State) recount() usageTable {
	t := usageTable{}
	for r := range s.resources.all() {
		for i := 0; i < r.holderCount(); i++ {
			t.add(r.name, s.clients.name(r.holderAt(i).client()), 1, 0)
		}
		for _, w := range r.queue() {
			t.add(r.name, s.clients.name(w.client), 0, 1)
		}
	}
	return t
}

// Usage reports the leases and queue entries of namespace ns, or with
// client set of that client within it.
func (s *State) Usage(ns, client string) (held, queued int) {
	u := s.counted()[usageKey{namespace: ns, client: client}]
	return int(u.held), int(u.queued)
}

// acquireExceeds names the limit a single acquire of r (nil: not in the
// table) would pass, or "" when it fits its quota: as a new lease when it
// would be granted now, as a queue entry when it would wait. A try-lock
// that would be refused anyway is not the quota's to refuse.
func (s *State) acquireExceeds(r *resource, cmd *Command) string {
	if cmd.Quota.IsZero() {
		return ""
	}
	t, ns := s.counted(), Namespace(cmd.Resource)
	if r == nil || (s.compatible(r, cmd.Mode) && len(r.queue()) == 0) {
		return t.exceeds(cmd.Quota, ns, cmd.ClientID, 1, true)
	}
	if cmd.WaitMs == 0 || cmd.Policy == Throughput {
		return ""
	}
	return t.exceeds(cmd.Quota, ns, cmd.ClientID, 1, false)
}
