package lock

// expiryHeap orders resources with holders by their earliest lease expiry,
// so the leases due at log time T are found without a scan. It is intrusive
// (each resource keeps its index) to spend 8 bytes per resource, not an entry
// struct. Ties break on the fencing token, which is unique, so the order is
// total and a replica restored from a snapshot expires leases in the same
// order as one that replayed the log (tokens handed to waiters depend on it).
type expiryHeap []*resource

func (h expiryHeap) less(i, j int) bool {
	ai, ti := h[i].due()
	aj, tj := h[j].due()
	if ai != aj {
		return ai < aj
	}
	return ti < tj
}

func (h expiryHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex = int32(i)
	h[j].heapIndex = int32(j)
}

func (h *expiryHeap) push(r *resource) {
	r.heapIndex = int32(len(*h))
	*h = append(*h, r)
	h.up(len(*h) - 1)
}

func (h *expiryHeap) remove(r *resource) {
	i := int(r.heapIndex)
	if i < 0 || i >= len(*h) || (*h)[i] != r {
		panic("lock: resource not at its heap index")
	}
	last := len(*h) - 1
	if i != last {
		h.swap(i, last)
	}
	(*h)[last] = nil
	*h = (*h)[:last]
	r.heapIndex = -1
	if i != last {
		h.fix(i)
	}
}

// fix restores order after r's due time changed.
func (h expiryHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h expiryHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h expiryHeap) down(i0 int) bool {
	i, n := i0, len(h)
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
