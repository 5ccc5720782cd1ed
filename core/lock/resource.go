package lock

import (
	"encoding/binary"
	"slices"
)

// holder is the stored form of a live lease. It is kept small on purpose
// (40 B): the first holder of every resource is stored inline and memory per
// active lease is a capacity target.
type holder struct {
	id         LeaseID
	token      uint64
	expiresAt  int64
	ttlMs      uint32
	clientMode clientMode
}

func (h *holder) client() uint32 { return h.clientMode.slot() }
func (h *holder) mode() Mode     { return h.clientMode.mode() }

// clientMode packs an interned client slot (low 30 bits) with a Mode (top 2
// bits): a separate Mode byte would pad holder from 40 to 48 bytes. A
// billion distinct live clients would exhaust memory long before the slots.
type clientMode uint32

const clientSlotBits = 30

func makeClientMode(slot uint32, m Mode) clientMode {
	if slot >= 1<<clientSlotBits || m > 3 {
		panic("lock: client slot or mode does not fit in 32 bits")
	}
	return clientMode(uint32(m)<<clientSlotBits | slot)
}

func (c clientMode) slot() uint32 { return uint32(c) & (1<<clientSlotBits - 1) }
func (c clientMode) mode() Mode   { return Mode(c >> clientSlotBits) }

// waiter is the stored form of a queued request.
type waiter struct {
	id LeaseID
	// deadline is the latest of its attempts' deadlines.
	deadline int64
	ttlMs    uint32
	client   uint32
	mode     Mode
	// graceMs is the grace window its grant will have (grace.go).
	graceMs uint32
	// attempts are the attempts still waiting for this request: the
	// original and any retry (same request id) that joined its wait. The
	// request leaves the queue when the last of them gives up. Every part
	// of a multi request holds equal copies.
	attempts []attempt
	// many is the multi request this entry is one part of, nil for a
	// single-resource request. Its parts share the pointer; it is never
	// edited.
	many *manyRequest
}

// attempt is one proposal of a queued request whose caller waits for it.
type attempt struct {
	// id is the lease id the attempt was proposed with (the original's is
	// the request's own).
	id LeaseID
	// host and incarnation name the node process holding the caller; when
	// that process is gone nobody can be told of a grant.
	host        string
	incarnation uint64
	deadline    int64
}

// hasAttempt reports whether attempt id waits for w.
func (w *waiter) hasAttempt(id LeaseID) bool {
	return slices.ContainsFunc(w.attempts, func(a attempt) bool { return a.id == id })
}

// resource is one lock. A resource exists only while it has holders; a
// queue is never kept without a holder because a free lock grants its head.
// Records live in a resourceArena (72 B each).
type resource struct {
	name  string
	first holder
	more  *resourceExtra
	// id is the record's arena id; 0 marks a free record.
	id uint32
	// permits is the N of a semaphore (semaphore.go), 0 for a plain lock;
	// it takes what was padding.
	permits uint32
}

// resourceExtra holds the rarely used parts: extra holders (shared ones,
// or a semaphore's further permits) and the wait queue. Uncontended exclusive locks never allocate it.
type resourceExtra struct {
	shared []holder
	queue  []waiter
}

// clone copies e deeply enough that edits of either copy leave the other
// alone (a waiter's many request is never edited, so it is shared).
func (e *resourceExtra) clone() *resourceExtra {
	c := &resourceExtra{shared: slices.Clone(e.shared), queue: slices.Clone(e.queue)}
	for i := range c.queue {
		c.queue[i].attempts = slices.Clone(c.queue[i].attempts)
	}
	return c
}

func (r *resource) holderCount() int {
	n := 0
	if r.first.token != 0 {
		n = 1
	}
	if r.more != nil {
		n += len(r.more.shared)
	}
	return n
}

// holderAt returns the i-th holder, first the inline one.
func (r *resource) holderAt(i int) *holder {
	if i == 0 {
		return &r.first
	}
	return &r.more.shared[i-1]
}

func (r *resource) findHolder(id LeaseID) int {
	n := r.holderCount()
	for i := 0; i < n; i++ {
		if r.holderAt(i).id == id {
			return i
		}
	}
	return -1
}

// removeHolder drops holder i, keeping the others in grant order.
func (r *resource) removeHolder(i int) {
	if i == 0 {
		if r.more != nil && len(r.more.shared) > 0 {
			r.first = r.more.shared[0]
			r.more.shared = deleteAt(r.more.shared, 0)
		} else {
			r.first = holder{}
		}
	} else {
		r.more.shared = deleteAt(r.more.shared, i-1)
	}
	r.shrink()
}

func (r *resource) addHolder(h holder) {
	if r.first.token == 0 {
		r.first = h
		return
	}
	r.extra().shared = append(r.extra().shared, h)
}

func (r *resource) extra() *resourceExtra {
	if r.more == nil {
		r.more = &resourceExtra{}
	}
	return r.more
}

func (r *resource) queue() []waiter {
	if r.more == nil {
		return nil
	}
	return r.more.queue
}

func (r *resource) findWaiter(id LeaseID) int {
	for i, w := range r.queue() {
		if w.id == id {
			return i
		}
	}
	return -1
}

func (r *resource) removeWaiter(i int) {
	r.more.queue = deleteAt(r.more.queue, i)
	r.shrink()
}

func (r *resource) shrink() {
	if r.more != nil && len(r.more.shared) == 0 && len(r.more.queue) == 0 {
		r.more = nil
	}
}

// compatible reports whether a request in mode m could hold r right now,
// ignoring the queue.
func (s *State) compatible(r *resource, m Mode) bool {
	n := r.holderCount()
	if n == 0 {
		return true
	}
	if r.semaphore() {
		return m == Exclusive && s.permitsFree(r)
	}
	return m == Shared && r.first.mode() == Shared
}

// due is the earliest expiry among holders, with the token of that holder
// as a tie-breaker (tokens are unique). A resource without holders is
// headed by a multi request (reindex keeps no other kind): it is due at
// that request's deadline, when the queue may move on, tie-broken by the
// top bit and the low bits of the head's lease id, which tell such
// resources apart from holders and the parts of one request apart (they
// differ there) but not always parts of two requests: expiryHeap.less
// breaks that tie on the name.
func (r *resource) due() (int64, uint64) {
	if r.first.token == 0 {
		w := &r.more.queue[0]
		return w.deadline, 1<<63 | binary.BigEndian.Uint64(w.id[8:])&(1<<63-1)
	}
	at, token := r.first.expiresAt, r.first.token
	if r.more != nil {
		for i := range r.more.shared {
			h := &r.more.shared[i]
			if h.expiresAt < at || (h.expiresAt == at && h.token < token) {
				at, token = h.expiresAt, h.token
			}
		}
	}
	return at, token
}

func deleteAt[T any](s []T, i int) []T {
	copy(s[i:], s[i+1:])
	var zero T
	s[len(s)-1] = zero
	return s[:len(s)-1]
}
