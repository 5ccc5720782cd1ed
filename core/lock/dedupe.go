package lock

import "strconv"

// dedupeTable remembers the answer to acquires that carried a request id,
// so a client that lost a reply and retries gets the same lease instead of a
// second one. Entries leave in insertion order once they are older than the
// window (log time) or the table is over its cap, which keeps it bounded and
// the eviction deterministic.
type dedupeTable struct {
	entries map[string]dedupeEntry
	order   []dedupeKey
	head    int
	// sum adds up the hashes of the live entries' encodings, kept as
	// entries come and go so that Digest need not encode the table.
	sum uint64
}

type dedupeEntry struct {
	resource string
	// lease is the grant, or for a queued request its id, client, mode and
	// TTL; with resource and policy it is the request a retry must repeat.
	lease   Lease
	granted bool
	policy  Policy
	// resources, for a multi request, are its resources in request order
	// (resource is then empty) and leases its grants (lease is leases[0]
	// once granted, else it carries the request's lease id).
	resources []string
	leases    []Lease
	// permits are a single acquire's Command.Permits: a semaphore's N is
	// part of the request a retry must repeat.
	permits uint32
}

// sameRequest reports whether cmd repeats the acquire e remembers. The wait
// may differ: a retry sends what is left of it.
func (e *dedupeEntry) sameRequest(cmd *Command) bool {
	return e.resource == cmd.Resource && e.lease.Mode == cmd.Mode &&
		e.lease.TTLMs == cmd.TTLMs && e.policy == cmd.Policy && permitLimit(e.permits) == permitLimit(cmd.Permits)
}

type dedupeKey struct {
	key string
	at  int64
}

func newDedupeTable() dedupeTable {
	return dedupeTable{entries: make(map[string]dedupeEntry)}
}

// dedupeKeyOf prefixes the client id with its length: ids may contain any
// byte (NUL included), and a plain separator would let two pairs collide.
func dedupeKeyOf(clientID, requestID string) string {
	return strconv.Itoa(len(clientID)) + ":" + clientID + requestID
}

func (t *dedupeTable) get(key string) (dedupeEntry, bool) {
	e, ok := t.entries[key]
	return e, ok
}

func (t *dedupeTable) put(key string, at int64, e dedupeEntry) {
	if _, ok := t.entries[key]; ok {
		return // the first answer is the one retries must see
	}
	// A remembered answer keeps no grace window: it names a grant, and a
	// grant that ended (LeaseEnded) has none left; snapshots keep leases
	// without it.
	e.lease = e.lease.withoutGrace()
	if len(e.leases) > 0 && e.leases[0].GraceMs != 0 {
		leases := make([]Lease, len(e.leases))
		for i, l := range e.leases {
			leases[i] = l.withoutGrace()
		}
		e.leases = leases
	}
	t.entries[key] = e
	t.order = append(t.order, dedupeKey{key: key, at: at})
	t.sum += dedupeEntryHash(key, at, e)
}

// evict drops entries recorded at or before cutoff and any beyond max.
func (t *dedupeTable) evict(cutoff int64, max int) {
	for t.head < len(t.order) {
		k := t.order[t.head]
		if k.at > cutoff && len(t.order)-t.head <= max {
			break
		}
		t.sum -= dedupeEntryHash(k.key, k.at, t.entries[k.key])
		delete(t.entries, k.key)
		t.order[t.head] = dedupeKey{}
		t.head++
	}
	// Compact once the dead prefix dominates, so the slice does not grow forever.
	if t.head > 1024 && t.head*2 > len(t.order) {
		n := copy(t.order, t.order[t.head:])
		clear(t.order[n:])
		t.order = t.order[:n]
		t.head = 0
	}
}

func (t *dedupeTable) len() int { return len(t.order) - t.head }
