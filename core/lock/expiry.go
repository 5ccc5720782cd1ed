package lock

import (
	"slices"
	"sort"
)

// expiryHeap orders resources with holders by their earliest lease expiry
// (and those a multi request's queue entry keeps by its deadline, see
// resource.due), so the leases due at log time T are found without a scan. It holds 4-byte
// arena ids, and each record's place in it by slot, so it costs about 8
// bytes per resource. The places are kept here rather than in the records so
// that sifting writes no record: a record that a frozen snapshot shares is
// then copied only when the lock itself changes (see resourceArena.freeze). Ties break on the fencing token, which is
// unique (then, for locks nobody holds, on the name), so the order is total and a replica restored from a snapshot
// expires leases in the same order as one that replayed the log (tokens
// handed to waiters depend on it).
type expiryHeap struct {
	arena *resourceArena
	ids   []uint32
	// pos[slot] is 1 + the heap index of the record in slot, 0 when it is
	// not in the heap.
	pos []int32
}

func newExpiryHeap(arena *resourceArena) expiryHeap {
	return expiryHeap{arena: arena}
}

func (h *expiryHeap) len() int { return len(h.ids) }

// min returns the resource due first; the heap must not be empty.
func (h *expiryHeap) min() *resource { return h.arena.at(h.ids[0]) }

// indexOf returns r's index in the heap, -1 when it is not there.
func (h *expiryHeap) indexOf(r *resource) int {
	if s := int(slotOf(r.id)); s < len(h.pos) {
		return int(h.pos[s]) - 1
	}
	return -1
}

func (h *expiryHeap) place(id uint32, i int) {
	s := int(slotOf(id))
	if s >= len(h.pos) {
		h.pos = append(h.pos, make([]int32, s+1-len(h.pos))...)
	}
	h.pos[s] = int32(i + 1)
}

func (h *expiryHeap) less(i, j int) bool {
	ri, rj := h.arena.peekAt(h.ids[i]), h.arena.peekAt(h.ids[j])
	ai, ti := ri.due()
	aj, tj := rj.due()
	if ai != aj {
		return ai < aj
	}
	if ti != tj {
		return ti < tj
	}
	// Only locks nobody holds tie here: two multi requests' parts whose
	// ids agree in their low bits (see resource.due). The name is unique,
	// so the order stays total and does not depend on the heap's history.
	return ri.name < rj.name
}

func (h *expiryHeap) swap(i, j int) {
	h.ids[i], h.ids[j] = h.ids[j], h.ids[i]
	h.place(h.ids[i], i)
	h.place(h.ids[j], j)
}

func (h *expiryHeap) push(r *resource) {
	h.place(r.id, len(h.ids))
	h.ids = append(h.ids, r.id)
	h.up(len(h.ids) - 1)
}

func (h *expiryHeap) remove(r *resource) {
	i := h.indexOf(r)
	if i < 0 || i >= len(h.ids) || h.ids[i] != r.id {
		panic("lock: resource not at its heap index")
	}
	last := len(h.ids) - 1
	if i != last {
		h.swap(i, last)
	}
	h.ids = h.ids[:last]
	h.pos[slotOf(r.id)] = 0
	if i != last {
		h.fix(i)
	}
}

// fix restores order after the due time at index i changed.
func (h *expiryHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *expiryHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *expiryHeap) down(i0 int) bool {
	i, n := i0, len(h.ids)
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && h.less(r, j) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

// appendOrder appends the names of the heap's resources in the order the
// heap's own comparison puts them: the order in which their leases expire
// (and their waiters are granted, with tokens in that order). A replica
// restored from a snapshot rebuilt its heap in name order, so Digest covers
// this order: any tie left open shows as a divergence from a replica that
// replayed the log.
func (h *expiryHeap) appendOrder(buf []byte) []byte {
	tmp := expiryHeap{arena: h.arena, ids: slices.Clone(h.ids)}
	sort.Slice(tmp.ids, func(i, j int) bool { return tmp.less(i, j) })
	for _, id := range tmp.ids {
		buf = appendString(buf, h.arena.peekAt(id).name)
	}
	return buf
}
