package lock

import "iter"

// arenaChunkShift sets the records per arena chunk (256). 256 records of
// 72 B fill the 18 KiB size class exactly, so a tiny state (tests build
// thousands) pays little, and a million resources need ~4,000 chunk pointers.
const (
	arenaChunkShift = 8
	arenaChunkLen   = 1 << arenaChunkShift
)

// resourceArena stores resource records by value in fixed-size chunks,
// addressed by uint32 ids. Against one heap object per resource it saves the
// allocator's size-class rounding, and it lets the name index and the expiry
// heap hold 4-byte ids instead of 8-byte pointers. Chunks never move, so a
// *resource stays valid until its id is freed. Id 0 is never handed out:
// the index uses 0 for an empty slot, and a zeroed record (id 0) is free.
type resourceArena struct {
	chunks []*[arenaChunkLen]resource
	next   uint32   // lowest id never handed out
	free   []uint32 // freed ids, reused last in first out
}

func newResourceArena() *resourceArena {
	return &resourceArena{next: 1}
}

// at returns the record of id; the caller knows id is allocated.
func (a *resourceArena) at(id uint32) *resource {
	return &a.chunks[id>>arenaChunkShift][id&(arenaChunkLen-1)]
}

// alloc hands out a fresh record named name, outside the expiry heap. A new
// id is taken only when no freed one is left, so ids stay below the number
// of live resources plus one; the name index relies on that.
func (a *resourceArena) alloc(name string) *resource {
	var id uint32
	if n := len(a.free); n > 0 {
		id = a.free[n-1]
		a.free = a.free[:n-1]
	} else {
		if a.next == 0 {
			panic("lock: resource arena ran out of ids")
		}
		id = a.next
		a.next++
		if int(id>>arenaChunkShift) == len(a.chunks) {
			a.chunks = append(a.chunks, new([arenaChunkLen]resource))
		}
	}
	r := a.at(id)
	*r = resource{name: name, heapIndex: -1, id: id}
	return r
}

// release zeroes r, so its name and extras can be collected and iteration
// skips it, and queues its id for reuse.
func (a *resourceArena) release(r *resource) {
	id := r.id
	if id == 0 {
		panic("lock: resource released twice")
	}
	*r = resource{}
	a.free = append(a.free, id)
}

// all yields every live record in id order. Id order depends on history, so
// callers that produce output sort (snapshots sort by name).
func (a *resourceArena) all() iter.Seq[*resource] {
	return func(yield func(*resource) bool) {
		for _, chunk := range a.chunks {
			for i := range chunk {
				if r := &chunk[i]; r.id != 0 && !yield(r) {
					return
				}
			}
		}
	}
}
