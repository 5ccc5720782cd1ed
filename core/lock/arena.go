package lock

import (
	"iter"
	"slices"
)

// arenaChunkShift sets the records per arena chunk (256). 256 records of
// 72 B fill the 18 KiB size class exactly, so a tiny state (tests build
// thousands) pays little, and a million resources need ~4,000 chunk pointers.
const (
	arenaChunkShift = 8
	arenaChunkLen   = 1 << arenaChunkShift
)

// A record id is a slot number (low slotBits bits) and the slot's
// generation (high bits). Freeing a slot bumps its generation, so an id kept
// past the free (a stale heap entry, a pointer held across a call that freed
// the record) no longer matches the record and at panics instead of handing
// out whichever lock took the slot next.
const (
	slotBits = 24
	slotMask = 1<<slotBits - 1
)

// slotOf returns the slot number of id.
func slotOf(id uint32) uint32 { return id & slotMask }

// resourceArena stores resource records by value in fixed-size chunks,
// addressed by uint32 ids. Against one heap object per resource it saves the
// allocator's size-class rounding, and it lets the name index and the expiry
// heap hold 4-byte ids instead of 8-byte pointers. Chunks never move, so a
// *resource stays valid until its id is freed. Slot 0 is never handed out:
// the index uses 0 for an empty slot, and a zeroed record (id 0) is free.
type resourceArena struct {
	chunks []*[arenaChunkLen]resource
	// shared[c] is set while chunk c also belongs to a frozen copy (see
	// freeze): the chunk is copied before its first use afterwards.
	shared []bool
	// copied is where copyBack goes on: chunks below it are not shared.
	copied int
	next   uint32   // lowest slot never handed out
	free   []uint32 // ids of freed slots (old generation), reused last in first out
}

func newResourceArena() *resourceArena {
	return &resourceArena{next: 1}
}

// peek returns the record in slot for reading only. It may sit in a chunk
// a frozen copy shares, whose contents are still the live ones; reading it
// there saves copying chunks that are only looked at (heap comparisons,
// index probes).
func (a *resourceArena) peek(slot uint32) *resource {
	return &a.chunks[slot>>arenaChunkShift][slot&(arenaChunkLen-1)]
}

func (a *resourceArena) record(slot uint32) *resource {
	return &a.chunk(slot >> arenaChunkShift)[slot&(arenaChunkLen-1)]
}

// chunk returns chunk c for reading or writing, first copying it if a
// frozen copy shares it. Every access goes through here, so a record
// pointer always points into a chunk the arena owns alone.
func (a *resourceArena) chunk(c uint32) *[arenaChunkLen]resource {
	if a.shared[c] {
		a.unshare(c)
	}
	return a.chunks[c]
}

// unshare gives the arena its own copy of chunk c, extras included: apply
// edits holder and queue slices in place.
func (a *resourceArena) unshare(c uint32) {
	own := new([arenaChunkLen]resource)
	*own = *a.chunks[c]
	for i := range own {
		if own[i].more != nil {
			own[i].more = own[i].more.clone()
		}
	}
	a.chunks[c] = own
	a.shared[c] = false
}

// freeze returns the chunks as they stand and marks them shared, so later
// changes copy a chunk before touching it and the returned ones stay as
// they are. It costs a pointer copy per chunk (~4,000 at a million
// resources) instead of a copy of every record; the copying is spread over
// the applies that follow, at most one chunk (18 KiB) per chunk touched.
func (a *resourceArena) freeze() []*[arenaChunkLen]resource {
	for i := range a.shared {
		a.shared[i] = true
	}
	a.copied = 0
	return slices.Clone(a.chunks)
}

// copyBack unshares up to n chunks, lowest first, and reports whether any
// chunk may still be shared.
func (a *resourceArena) copyBack(n int) bool {
	for ; a.copied < len(a.chunks) && n > 0; a.copied++ {
		if a.shared[a.copied] {
			a.unshare(uint32(a.copied))
			n--
		}
	}
	return a.copied < len(a.chunks)
}

// at returns the record of id and panics unless id is live: its slot is
// allocated and of the same generation.
func (a *resourceArena) at(id uint32) *resource { return mustBeLive(a.record(slotOf(id)), id) }

// peekAt is at for reading only (see peek).
func (a *resourceArena) peekAt(id uint32) *resource { return mustBeLive(a.peek(slotOf(id)), id) }

func mustBeLive(r *resource, id uint32) *resource {
	if r.id != id {
		panic("lock: stale resource id (freed or reused slot)")
	}
	return r
}

// atSlot returns the live record in slot, for the name index, which keeps
// slot numbers only (it checks names, and a reused slot holds another name).
func (a *resourceArena) atSlot(slot uint32) *resource { return mustHoldSlot(a.record(slot), slot) }

// peekSlot is atSlot for reading only (see peek).
func (a *resourceArena) peekSlot(slot uint32) *resource { return mustHoldSlot(a.peek(slot), slot) }

func mustHoldSlot(r *resource, slot uint32) *resource {
	if slotOf(r.id) != slot {
		panic("lock: name index points at a free slot")
	}
	return r
}

// alloc hands out a fresh record named name, outside the expiry heap. A new
// slot is taken only when no freed one is left, so slots stay below the
// number of live resources plus one; the name index relies on that.
func (a *resourceArena) alloc(name string) *resource {
	var id uint32
	if n := len(a.free); n > 0 {
		old := a.free[n-1]
		a.free = a.free[:n-1]
		id = old + 1<<slotBits // next generation; wraps after 256 reuses of a slot
	} else {
		if a.next > slotMask {
			panic("lock: resource arena ran out of slots")
		}
		id = a.next
		a.next++
		if int(id>>arenaChunkShift) == len(a.chunks) {
			a.chunks = append(a.chunks, new([arenaChunkLen]resource))
			a.shared = append(a.shared, false)
		}
	}
	r := a.record(slotOf(id))
	*r = resource{name: name, id: id}
	return r
}

// release zeroes r, so its name and extras can be collected and iteration
// skips it, and queues its slot for reuse under the next generation.
func (a *resourceArena) release(r *resource) {
	id := r.id
	if id == 0 {
		panic("lock: resource released twice")
	}
	*r = resource{}
	a.free = append(a.free, id)
}

// all yields every live record in slot order. Slot order depends on history,
// so callers that produce output sort (snapshots sort by name).
func (a *resourceArena) all() iter.Seq[*resource] {
	return func(yield func(*resource) bool) {
		for c := range a.chunks {
			if !yieldLive(a.chunk(uint32(c)), yield) {
				return
			}
		}
	}
}

// liveRecords yields the live records of chunks, which the caller only
// reads (a frozen copy, or the arena's own chunks under the state's lock).
func liveRecords(chunks []*[arenaChunkLen]resource) iter.Seq[*resource] {
	return func(yield func(*resource) bool) {
		for _, chunk := range chunks {
			if !yieldLive(chunk, yield) {
				return
			}
		}
	}
}

func yieldLive(chunk *[arenaChunkLen]resource, yield func(*resource) bool) bool {
	for i := range chunk {
		if r := &chunk[i]; r.id != 0 && !yield(r) {
			return false
		}
	}
	return true
}
