package lock

// expiryHeap orders resources with holders by their earliest lease expiry
// (and those a multi request's queue entry keeps by its deadline, see
// resource.due), so the leases due at log time T are found without a scan. It holds 4-byte
// arena ids and is intrusive (each resource keeps its heap index) so it costs
// about 4 bytes per resource. Ties break on the fencing token, which is
// unique, so the order is total and a replica restored from a snapshot
// expires leases in the same order as one that replayed the log (tokens
// handed to waiters depend on it).
type expiryHeap struct {
	arena *resourceArena
	ids   []uint32
}

func newExpiryHeap(arena *resourceArena) expiryHeap {
	return expiryHeap{arena: arena}
}

func (h *expiryHeap) len() int { return len(h.ids) }

// min returns the resource due first; the heap must not be empty.
func (h *expiryHeap) min() *resource { return h.arena.at(h.ids[0]) }

func (h *expiryHeap) less(i, j int) bool {
	ai, ti := h.arena.at(h.ids[i]).due()
	aj, tj := h.arena.at(h.ids[j]).due()
	if ai != aj {
		return ai < aj
	}
	return ti < tj
}

func (h *expiryHeap) swap(i, j int) {
	h.ids[i], h.ids[j] = h.ids[j], h.ids[i]
	h.arena.at(h.ids[i]).heapIndex = int32(i)
	h.arena.at(h.ids[j]).heapIndex = int32(j)
}

func (h *expiryHeap) push(r *resource) {
	r.heapIndex = int32(len(h.ids))
	h.ids = append(h.ids, r.id)
	h.up(len(h.ids) - 1)
}

func (h *expiryHeap) remove(r *resource) {
	i := int(r.heapIndex)
	if i < 0 || i >= len(h.ids) || h.ids[i] != r.id {
		panic("lock: resource not at its heap index")
	}
	last := len(h.ids) - 1
	if i != last {
		h.swap(i, last)
	}
	h.ids = h.ids[:last]
	r.heapIndex = -1
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
