package lock

import "hash/maphash"

// nameIndex finds a resource's arena record by name. It is an open-addressing
// hash table of 4-byte slots (a Go map[string]*resource costs ~56 B per
// entry; this costs 4.6 to 9.1 B at its load bounds, up to 13.7 B while a
// resize drains the old table).
//
// Resizing is incremental: when the table passes its load bound a new one
// is made and every later insert or delete moves a few slots of the old one
// across, while lookups consult both. Rehashing a million names at once
// stalled apply for 150-300 ms (measured); this way no insert or delete pays
// more than indexMovesPerOp moves.
//
// The hash seed is random per index. Nothing observable depends on the
// layout (lookups answer the same, snapshots sort by name), and a fixed seed
// would let clients choose resource names that all probe the same slots.
type nameIndex struct {
	arena *resourceArena
	seed  maphash.Seed
	cur   probeTable
	// old is the table being drained into cur (no slots once drained);
	// slots of old below next have been moved.
	old  probeTable
	next int
}

// indexMovesPerOp is how many old slots each insert or delete moves. The
// tightest case, an in-place rebuild, starts with live names at most 7/16 of
// the length and must finish before inserts fill the new table to 7/8: that
// takes 16/7 moves per insert; 4 leaves a margin.
const indexMovesPerOp = 4

func newNameIndex(arena *resourceArena) nameIndex {
	return nameIndex{arena: arena, seed: maphash.MakeSeed(), cur: newProbeTable(probeMinBits)}
}

func (x *nameIndex) hash(name string) uint64 { return maphash.String(x.seed, name) }

func (x *nameIndex) len() int { return x.cur.live + x.old.live }

// find returns the live record named name, or nil.
func (x *nameIndex) find(name string) *resource {
	h := x.hash(name)
	if r := x.cur.find(x.arena, h, name); r != nil {
		return r
	}
	return x.old.find(x.arena, h, name)
}

// reserve makes room for one more name. Call it before allocating the
// record, so the new id stays below the (possibly new) table length.
func (x *nameIndex) reserve() {
	x.move(indexMovesPerOp)
	if !x.cur.full() {
		return
	}
	// The move rate keeps old drained by now; should it ever fall behind,
	// finish here, since replacing old would lose the names still in it.
	x.move(len(x.old.slots))
	bits := x.cur.bits
	// Grow only when live names fill more than half the load bound, so
	// acquire/release churn (tombstones) rebuilds in place instead.
	if (x.cur.live+1) > len(x.cur.slots)/16*7 && bits < probeMaxBits {
		bits++
	}
	x.old, x.cur, x.next = x.cur, newProbeTable(bits), 0
	x.move(indexMovesPerOp)
	if x.cur.full() {
		panic("lock: name index full")
	}
}

// put indexes r, whose name must not be indexed yet; reserve must have made
// room.
func (x *nameIndex) put(r *resource) { x.cur.put(x.hash(r.name), slotOf(r.id)) }

// delete removes r, which must be indexed.
func (x *nameIndex) delete(r *resource) {
	h := x.hash(r.name)
	slot := slotOf(r.id)
	if !x.cur.delete(h, slot) && !x.old.delete(h, slot) {
		panic("lock: deleting a resource that is not indexed")
	}
	x.move(indexMovesPerOp)
}

// move carries up to n slots of the old table into the current one and
// drops the old table once it holds nothing.
func (x *nameIndex) move(n int) {
	for ; n > 0 && x.old.live > 0 && x.next < len(x.old.slots); n-- {
		if s := x.old.slots[x.next]; s != slotEmpty && s != slotTombstone {
			id := s & x.old.mask()
			x.cur.put(x.hash(x.arena.peekSlot(id).name), id)
			// A tombstone, not empty: later old slots' probe chains pass here.
			x.old.slots[x.next] = slotTombstone
			x.old.live--
		}
		x.next++
	}
	if x.old.live == 0 {
		x.old, x.next = probeTable{}, 0
	}
}

// probeTable is one power-of-two array of slots. A slot holds an arena id
// in its low bits bits and a tag, more bits of the name's hash, above them.
// This fits because ids stay below the table length: the arena reuses ids
// before taking new ones, so ids never exceed the number of live resources,
// which the load bound keeps under 7/8 of the length, and tables only grow.
// The tag lets a probe skip almost every other name without touching the
// arena (a cache miss per record).
//
// Probing is triangular (home, +1, +3, +6, ...), which visits every slot of
// a power-of-two table. Deletion leaves a tombstone, which counts towards the
// load bound until the next rebuild drops it.
type probeTable struct {
	slots []uint32
	bits  uint // len(slots) == 1<<bits
	live  int  // slots holding an id
	used  int  // live slots plus tombstones
}

const (
	slotEmpty = 0
	// slotTombstone has the id bits zero and a tag bit set; live slots
	// never have a zero id, so it is distinct while bits < 32.
	slotTombstone = 1 << 31
	probeMinBits  = 3
	// probeMaxBits keeps one tag bit for the tombstone; Config caps
	// MaxResources at 1<<30, well under 7/8 of 1<<31.
	probeMaxBits = 31
)

func newProbeTable(bits uint) probeTable {
	return probeTable{slots: make([]uint32, 1<<bits), bits: bits}
}

func (t *probeTable) mask() uint32 { return uint32(len(t.slots) - 1) }

// full reports whether one more slot would pass the 7/8 load bound.
func (t *probeTable) full() bool { return t.used+1 > len(t.slots)/8*7 }

// start returns the home slot for hash h (its top bits) and its tag (low
// bits, disjoint from the home bits).
func (t *probeTable) start(h uint64) (home, tag uint32) {
	return uint32(h >> (64 - t.bits)), uint32(h) & (1<<(32-t.bits) - 1)
}

func (t *probeTable) find(a *resourceArena, h uint64, name string) *resource {
	if t.live == 0 {
		return nil
	}
	i, tag := t.start(h)
	mask := t.mask()
	for step := range uint32(len(t.slots)) {
		s := t.slots[i]
		if s == slotEmpty {
			return nil
		}
		if s != slotTombstone && s>>t.bits == tag {
			if slot := s & mask; a.peekSlot(slot).name == name {
				return a.atSlot(slot)
			}
		}
		i = (i + step + 1) & mask
	}
	return nil
}

// put stores id in the first empty or dead slot of h's probe sequence.
func (t *probeTable) put(h uint64, id uint32) {
	mask := t.mask()
	if id == 0 || id > mask {
		panic("lock: arena id does not fit the name index")
	}
	i, tag := t.start(h)
	for step := range uint32(len(t.slots)) {
		switch t.slots[i] {
		case slotEmpty:
			t.used++
			fallthrough
		case slotTombstone:
			t.slots[i] = tag<<t.bits | id
			t.live++
			return
		}
		i = (i + step + 1) & mask
	}
	panic("lock: name index has no free slot")
}

// delete replaces id's slot on h's probe sequence with a tombstone and
// reports whether it was there.
func (t *probeTable) delete(h uint64, id uint32) bool {
	if t.live == 0 {
		return false
	}
	i, _ := t.start(h)
	mask := t.mask()
	for step := range uint32(len(t.slots)) {
		s := t.slots[i]
		if s == slotEmpty {
			return false
		}
		if s != slotTombstone && s&mask == id {
			t.slots[i] = slotTombstone
			t.live--
			return true
		}
		i = (i + step + 1) & mask
	}
	return false
}
