package lock

import (
	"maps"
	"slices"
)

// snapshotView is everything a snapshot encodes, apart from the State so
// that it can be encoded later, off the apply path, from a frozen copy.
type snapshotView struct {
	lastToken, lastIndex, expired uint64
	clock                         logClock
	chunks                        []*[arenaChunkLen]resource
	resources                     int // live records in chunks
	// clients are the interned client names by slot.
	clients         []string
	unclaimed       map[LeaseID]claim
	grace           map[LeaseID]graceLease
	dedupe, settled dedupeView
}

// dedupeView is a dedupe-shaped table's live entries in insertion order.
type dedupeView struct {
	live    []dedupeKey
	entries map[string]dedupeEntry
}

// view shares the state's own structures: it must be used before the next
// Apply.
func (s *State) view() snapshotView {
	return snapshotView{
		lastToken: s.lastToken, lastIndex: s.lastIndex, expired: s.expired, clock: s.clock,
		chunks: s.resources.arena.chunks, resources: s.resources.len(),
		clients:   s.clients.names,
		unclaimed: s.unclaimed,
		grace:     s.grace,
		dedupe:    dedupeView{live: s.dedupe.order[s.dedupe.head:], entries: s.dedupe.entries},
		settled:   dedupeView{live: s.settled.order[s.settled.head:], entries: s.settled.entries},
	}
}

// Frozen is the state as it was at one point, kept aside so that it can be
// encoded while Apply goes on (a Raft snapshot's Persist). Freezing copies
// no lock record: the arena's chunks are shared until Apply next touches
// them (see resourceArena.freeze).
type Frozen struct {
	v snapshotView
}

// Freeze returns the state as it stands. What it costs the caller is a
// pointer copy per 256 resources, plus copies of the client names, the
// unclaimed grants and the two dedupe tables (those grow with requests in
// the dedupe window, not with held locks).
func (s *State) Freeze() *Frozen {
	v := s.view()
	v.chunks = s.resources.arena.freeze()
	v.clients = slices.Clone(v.clients)
	v.unclaimed = maps.Clone(v.unclaimed)
	v.grace = maps.Clone(v.grace)
	v.dedupe = v.dedupe.clone()
	v.settled = v.settled.clone()
	return &Frozen{v: v}
}

func (d dedupeView) clone() dedupeView {
	return dedupeView{live: slices.Clone(d.live), entries: maps.Clone(d.entries)}
}

// CopyBack gives the state its own copy of up to n of the chunks a freeze
// shares (18 KiB each) and reports whether more remain. A snapshot's writer
// calls it in small steps, each under the lock that serialises Apply, so
// that the copying a freeze defers is done there and not by the applies
// that first touch each chunk (tens of microseconds per chunk).
func (s *State) CopyBack(n int) (more bool) { return s.resources.arena.copyBack(n) }

// Index is the last log index applied before the state was frozen.
func (f *Frozen) Index() uint64 { return f.v.lastIndex }

// Snapshot encodes the frozen state: the bytes State.Snapshot returned at
// the moment of the freeze.
func (f *Frozen) Snapshot() []byte { return f.v.encode() }
