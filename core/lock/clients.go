package lock

// clientTable interns client ids so that a lease stores 4 bytes instead of a
// string header; thousands of leases usually share a handful of clients.
// Slots are reference counted and reused, so the table stays as small as the
// set of clients with live leases or waiters. Slot numbers never leave the
// state machine (snapshots store names), so replicas may number differently.
type clientTable struct {
	index map[string]uint32
	names []string
	refs  []uint32
	free  []uint32
}

func newClientTable() clientTable {
	return clientTable{index: make(map[string]uint32)}
}

func (t *clientTable) ref(name string) uint32 {
	if slot, ok := t.index[name]; ok {
		t.refs[slot]++
		return slot
	}
	var slot uint32
	if n := len(t.free); n > 0 {
		slot = t.free[n-1]
		t.free = t.free[:n-1]
		t.names[slot] = name
		t.refs[slot] = 1
	} else {
		slot = uint32(len(t.names))
		t.names = append(t.names, name)
		t.refs = append(t.refs, 1)
	}
	t.index[name] = slot
	return slot
}

func (t *clientTable) unref(slot uint32) {
	if t.refs[slot] == 0 {
		panic("lock: client slot released twice")
	}
	t.refs[slot]--
	if t.refs[slot] == 0 {
		delete(t.index, t.names[slot])
		t.names[slot] = ""
		t.free = append(t.free, slot)
	}
}

func (t *clientTable) name(slot uint32) string { return t.names[slot] }

func (t *clientTable) len() int { return len(t.index) }
