package lock

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
)

// snapshotMagic starts every snapshot; the trailing digit is the version.
// Version 2 lacked holders' unclaimed flags, waiters' owner and host, and
// the policy of remembered requests; version 3 lacked multi requests;
// version 4 lacked the entry (index, term) that made each unclaimed grant;
// version 5 lacked each resource's permits (every lock was plain) and the
// permits of remembered requests; version 6 lacked grace windows
// (graceFlag). All still restore, with what they lack zero.
const (
	snapshotMagic   = "LKSNAP7\n"
	snapshotMagicV6 = "LKSNAP6\n"
	snapshotMagicV5 = "LKSNAP5\n"
	snapshotMagicV4 = "LKSNAP4\n"
	snapshotMagicV3 = "LKSNAP3\n"
	snapshotMagicV2 = "LKSNAP2\n"
)

// manyFlag marks a multi request's queue entry in its snapshot mode byte;
// the request's lease id and resources follow the entry.
const manyFlag = 0x80

// unclaimedFlag marks an unclaimed holder in its snapshot mode byte; the
// owning attempt's id follows the holder.
const unclaimedFlag = 0x80

// graceFlag marks, in a holder's or waiter's snapshot mode byte (version 7
// on), a grace window: its length follows the holder (then when its TTL
// ran out, 0 while held) or the waiter.
const graceFlag = 0x40

// Snapshot encodes the full state: clock, token counter, holders, queues and
// the dedupe table. The encoding is canonical (resources sorted by name,
// holders and waiters in order, dedupe entries in insertion order), so two
// replicas with the same state produce the same bytes.
func (s *State) Snapshot() []byte {
	v := s.view()
	return v.encode()
}

func (v *snapshotView) encode() []byte {
	return v.encodeVersion(snapshotCurrent)
}

// snapshotCurrent is the version Snapshot writes.
const snapshotCurrent = 7

// encodeVersion encodes in the current version or, for tests of older
// members' snapshots, version 5 (which has no permits: a state holding a
// semaphore cannot be written so) or 6 (which has no grace windows).
func (v *snapshotView) encodeVersion(version int) []byte {
	buf := v.appendCoreVersion(make([]byte, 0, 64+v.resources*96), version)
	buf = v.dedupe.append(buf, version)
	return v.settled.append(buf, version)
}

// appendCore encodes everything but the dedupe tables.
func (v *snapshotView) appendCore(buf []byte) []byte {
	return v.appendCoreVersion(buf, snapshotCurrent)
}

func (v *snapshotView) appendCoreVersion(buf []byte, version int) []byte {
	switch version {
	case 5:
		buf = append(buf, snapshotMagicV5...)
	case 6:
		buf = append(buf, snapshotMagicV6...)
	default:
		buf = append(buf, snapshotMagic...)
	}
	buf = binary.AppendUvarint(buf, v.lastToken)
	buf = binary.AppendUvarint(buf, v.lastIndex)
	buf = binary.AppendUvarint(buf, v.expired)
	buf = binary.AppendVarint(buf, v.clock.now)
	buf = binary.AppendUvarint(buf, v.clock.term)
	buf = binary.AppendVarint(buf, v.clock.mono)

	sorted := make([]*resource, 0, v.resources)
	for r := range liveRecords(v.chunks) {
		sorted = append(sorted, r)
	}
	slices.SortFunc(sorted, func(a, b *resource) int { return strings.Compare(a.name, b.name) })
	buf = binary.AppendUvarint(buf, uint64(len(sorted)))
	for _, r := range sorted {
		buf = appendString(buf, r.name)
		if version >= 6 {
			buf = binary.AppendUvarint(buf, uint64(r.permits))
		} else if r.permits != 0 {
			panic("lock: a semaphore in a version 5 snapshot")
		}
		n := r.holderCount()
		buf = binary.AppendUvarint(buf, uint64(n))
		for i := 0; i < n; i++ {
			h := r.holderAt(i)
			buf = append(buf, h.id[:]...)
			mode := byte(h.mode())
			c, unclaimed := v.unclaimed[h.id]
			if unclaimed {
				mode |= unclaimedFlag
			}
			g, graced := v.grace[h.id]
			if graced {
				if version < 7 {
					panic("lock: a grace window in a version 5 or 6 snapshot")
				}
				mode |= graceFlag
			}
			buf = append(buf, mode)
			buf = binary.AppendUvarint(buf, h.token)
			buf = binary.AppendVarint(buf, h.expiresAt)
			buf = binary.AppendUvarint(buf, uint64(h.ttlMs))
			buf = appendString(buf, v.clients[h.client()])
			if unclaimed {
				buf = appendAttempts(buf, c.attempts)
				buf = binary.AppendUvarint(buf, c.index)
				buf = binary.AppendUvarint(buf, c.term)
			}
			if graced {
				buf = binary.AppendUvarint(buf, uint64(g.ms))
				buf = binary.AppendVarint(buf, g.expired)
			}
		}
		q := r.queue()
		buf = binary.AppendUvarint(buf, uint64(len(q)))
		for _, w := range q {
			buf = append(buf, w.id[:]...)
			mode := byte(w.mode)
			if w.many != nil {
				mode |= manyFlag
			}
			if w.graceMs != 0 {
				if version < 7 {
					panic("lock: a waiter's grace window in a version 5 or 6 snapshot")
				}
				mode |= graceFlag
			}
			buf = append(buf, mode)
			buf = binary.AppendVarint(buf, w.deadline)
			buf = binary.AppendUvarint(buf, uint64(w.ttlMs))
			buf = appendString(buf, v.clients[w.client])
			buf = appendAttempts(buf, w.attempts)
			if w.many != nil {
				buf = append(buf, w.many.base[:]...)
				buf = appendStrings(buf, w.many.resources)
			}
			if w.graceMs != 0 {
				buf = binary.AppendUvarint(buf, uint64(w.graceMs))
			}
		}
	}
	return buf
}

// Digest is a hash of the whole state, equal on replicas whose Snapshots
// are equal (and, but for hash collisions, different otherwise), and of the
// order in which the locks' leases expire, which a restore must rebuild
// (see expiryHeap.appendOrder). It costs what encoding the lock table does,
// not the dedupe tables, which can be far larger: their hashes are kept up
// to date as entries come and go.
func (s *State) Digest() uint64 {
	h := fnv.New64a()
	v := s.view()
	buf := v.appendCore(make([]byte, 0, 64+s.resources.len()*96))
	_, _ = h.Write(s.expiry.appendOrder(buf))
	sum := h.Sum64()
	for _, t := range []*dedupeTable{&s.dedupe, &s.settled} {
		sum = sum*1099511628211 ^ t.sum
		sum = sum*1099511628211 ^ uint64(t.len())
	}
	return sum
}

// dedupeEntryHash hashes one entry's snapshot encoding.
func dedupeEntryHash(key string, at int64, e dedupeEntry) uint64 {
	var scratch [256]byte
	h := fnv.New64a()
	_, _ = h.Write(appendDedupeEntry(scratch[:0], key, at, e, 6))
	return h.Sum64()
}

// append encodes a dedupe-shaped table in insertion order, in snapshot
// version (see encodeVersion).
func (d dedupeView) append(buf []byte, version int) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(d.live)))
	for _, k := range d.live {
		buf = appendDedupeEntry(buf, k.key, k.at, d.entries[k.key], version)
	}
	return buf
}

func appendDedupeEntry(buf []byte, key string, at int64, e dedupeEntry, version int) []byte {
	buf = appendString(buf, key)
	buf = binary.AppendVarint(buf, at)
	buf = appendString(buf, e.resource)
	buf = appendLease(buf, e.lease)
	if e.granted {
		buf = append(buf, 1)
	} else {
		buf = append(buf, 0)
	}
	buf = append(buf, byte(e.policy))
	buf = appendStrings(buf, e.resources)
	buf = binary.AppendUvarint(buf, uint64(len(e.leases)))
	for _, l := range e.leases {
		buf = appendLease(buf, l)
	}
	if version < 6 {
		if e.permits != 0 {
			panic("lock: a semaphore's request in a version 5 snapshot")
		}
		return buf
	}
	return binary.AppendUvarint(buf, uint64(e.permits))
}

func appendStrings(buf []byte, list []string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(list)))
	for _, v := range list {
		buf = appendString(buf, v)
	}
	return buf
}

func (d *decoder) strings() []string {
	n := d.count(1)
	var list []string
	for i := 0; i < n && d.err == nil; i++ {
		list = append(list, d.string())
	}
	return list
}

func appendLease(buf []byte, l Lease) []byte {
	buf = append(buf, l.ID[:]...)
	buf = append(buf, byte(l.Mode))
	buf = binary.AppendUvarint(buf, l.Token)
	buf = binary.AppendVarint(buf, l.ExpiresAt)
	buf = binary.AppendVarint(buf, l.TTLMs)
	return appendString(buf, l.ClientID)
}

// dedupe decodes what appendDedupe wrote into t.
func (d *decoder) dedupe(t *dedupeTable) {
	n := d.count(20)
	for i := 0; i < n && d.err == nil; i++ {
		key := d.string()
		at := d.varint()
		e := dedupeEntry{resource: d.string(), lease: d.lease(), granted: d.byte() == 1}
		if d.version >= 3 {
			e.policy = Policy(d.byte())
		}
		if d.version >= 4 {
			e.resources = d.strings()
			nl := d.count(20)
			for j := 0; j < nl && d.err == nil; j++ {
				e.leases = append(e.leases, d.lease())
			}
		}
		if d.version >= 6 {
			e.permits = d.uint32()
		}
		t.put(key, at, e)
	}
}

func (d *decoder) lease() Lease {
	var l Lease
	d.bytes(l.ID[:])
	l.Mode = Mode(d.byte())
	l.Token = d.uvarint()
	l.ExpiresAt = d.varint()
	l.TTLMs = d.varint()
	l.ClientID = d.string()
	return l
}

// Restore replaces the state with a decoded snapshot. On error the state is
// left unchanged.
func (s *State) Restore(b []byte) error {
	version, err := snapshotVersion(b)
	if err != nil {
		return err
	}
	fresh, err := New(s.cfg)
	if err != nil {
		return err
	}
	d := decoder{b: b, off: len(snapshotMagic), version: version}
	fresh.lastToken = d.uvarint()
	fresh.lastIndex = d.uvarint()
	fresh.expired = d.uvarint()
	fresh.clock.now = d.varint()
	fresh.clock.term = d.uvarint()
	fresh.clock.mono = d.varint()
	nres := d.count(3)
	many := make(map[LeaseID]*manyParts)
	for i := 0; i < nres && d.err == nil; i++ {
		fresh.restoreResource(&d, many)
	}
	if d.err == nil {
		d.err = checkManyParts(many)
	}
	d.dedupe(&fresh.dedupe)
	d.dedupe(&fresh.settled)
	if d.err == nil && d.off != len(b) {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(b)-d.off)
	}
	if d.err != nil {
		return fmt.Errorf("restore lock snapshot: %w", d.err)
	}
	*s = *fresh
	s.forgetOnNewTerm()
	return nil
}

// snapshotVersion reads the magic every snapshot starts with.
func snapshotVersion(b []byte) (int, error) {
	for _, m := range []struct {
		magic   string
		version int
	}{{snapshotMagic, 7}, {snapshotMagicV6, 6}, {snapshotMagicV5, 5}, {snapshotMagicV4, 4}, {snapshotMagicV3, 3}, {snapshotMagicV2, 2}} {
		if len(b) >= len(m.magic) && string(b[:len(m.magic)]) == m.magic {
			return m.version, nil
		}
	}
	return 0, fmt.Errorf("%w: not a lock snapshot", ErrCorrupt)
}

// SnapshotIndex returns the index of the last entry the snapshot's state
// applied (Metrics().LastIndex once restored), reading only its header,
// so a replica can tell an older snapshot from a newer one before
// restoring it.
func SnapshotIndex(b []byte) (uint64, error) {
	version, err := snapshotVersion(b)
	if err != nil {
		return 0, err
	}
	d := decoder{b: b, off: len(snapshotMagic), version: version}
	_ = d.uvarint() // the token counter comes first
	index := d.uvarint()
	if d.err != nil {
		return 0, fmt.Errorf("snapshot header: %w", d.err)
	}
	return index, nil
}

func validMode(m Mode) bool { return m == Exclusive || m == Shared }

func (s *State) restoreResource(d *decoder, many map[LeaseID]*manyParts) {
	name := d.string()
	if d.err != nil {
		return
	}
	if s.resources.find(name) != nil {
		d.err = fmt.Errorf("%w: resource %q repeated", ErrCorrupt, name)
		return
	}
	// On any error below the whole fresh state is discarded, so the record
	// may be inserted before its holders are checked.
	r := s.resources.insert(name)
	if d.version >= 6 {
		// Its holders are checked against it below, so it comes first.
		p := d.uvarint()
		if d.err == nil && (p == 1 || p > MaxPermits) {
			d.err = fmt.Errorf("%w: resource %q: permits %d", ErrCorrupt, name, p)
			return
		}
		r.permits = uint32(p)
	}
	nh := d.count(20)
	for j := 0; j < nh && d.err == nil; j++ {
		var h holder
		d.bytes(h.id[:])
		modeByte := d.byte()
		flags := byte(unclaimedFlag)
		if d.version >= 7 {
			flags |= graceFlag
		}
		mode := Mode(modeByte &^ flags)
		h.token = d.uvarint()
		h.expiresAt = d.varint()
		h.ttlMs = uint32(d.uvarint())
		slot := s.clients.ref(d.string())
		if d.err != nil {
			return
		}
		// Apply panics on a broken invariant, so a snapshot must not be
		// able to smuggle one in.
		if !s.tokenInRange(h.token) || !validMode(mode) || !s.compatible(r, mode) {
			d.err = fmt.Errorf("%w: resource %q: holder token %d mode %d breaks the lock invariants", ErrCorrupt, r.name, h.token, mode)
			return
		}
		h.clientMode = makeClientMode(slot, mode)
		if modeByte&unclaimedFlag != 0 {
			c := claim{attempts: d.attempts()}
			if d.version >= 5 {
				c.index, c.term = d.uvarint(), d.uvarint()
			}
			s.unclaimed[h.id] = c
		}
		if modeByte&flags&graceFlag != 0 {
			g := graceLease{ms: uint32(d.uvarint()), expired: d.varint()}
			if d.err == nil && (g.ms == 0 || g.ms > h.ttlMs) {
				d.err = fmt.Errorf("%w: resource %q: holder grace %d ms with ttl %d ms", ErrCorrupt, r.name, g.ms, h.ttlMs)
				return
			}
			if s.grace == nil {
				s.grace = make(map[LeaseID]graceLease)
			}
			s.grace[h.id] = g
		}
		r.addHolder(h)
		s.leases++
		s.usage.add(r.name, s.clients.name(slot), 1, 0)
	}
	nq := d.count(20)
	for j := 0; j < nq && d.err == nil; j++ {
		var w waiter
		d.bytes(w.id[:])
		modeByte := d.byte()
		flags := byte(manyFlag)
		if d.version >= 7 {
			flags |= graceFlag
		}
		w.mode = Mode(modeByte &^ flags)
		w.deadline = d.varint()
		w.ttlMs = uint32(d.uvarint())
		w.client = s.clients.ref(d.string())
		if d.version >= 3 {
			w.attempts = d.attempts()
		} else {
			w.attempts = []attempt{{id: w.id, deadline: w.deadline}}
		}
		if modeByte&manyFlag != 0 {
			w.many = restorePart(d, many, r.name, w.id)
		}
		if modeByte&flags&graceFlag != 0 {
			w.graceMs = uint32(d.uvarint())
		}
		if d.err == nil && !validMode(w.mode) {
			d.err = fmt.Errorf("%w: resource %q: waiter mode %d", ErrCorrupt, r.name, w.mode)
		}
		s.pushWaiter(r, w)
	}
	if d.err != nil {
		return
	}
	if r.holderCount() == 0 {
		// Only a multi request, waiting for its other resources, keeps a
		// lock nobody holds.
		if q := r.queue(); len(q) == 0 || q[0].many == nil {
			d.err = fmt.Errorf("%w: resource %q has no holders", ErrCorrupt, r.name)
			return
		}
	}
	s.expiry.push(r)
}

// manyParts gathers the queue entries of one multi request while a
// snapshot restores.
type manyParts struct {
	request *manyRequest
	seen    uint64 // bit j: part j was restored
}

// restorePart reads the multi request of the queue entry id on resource
// name and links it to the request's other parts.
func restorePart(d *decoder, many map[LeaseID]*manyParts, name string, id LeaseID) *manyRequest {
	var base LeaseID
	d.bytes(base[:])
	resources := d.strings()
	if d.err != nil {
		return nil
	}
	p := many[base]
	if p == nil {
		p = &manyParts{request: &manyRequest{base: base, resources: resources}}
		many[base] = p
	}
	j := slices.Index(resources, name)
	if len(resources) > MaxManyResources || j < 0 || ManyLeaseID(base, j) != id ||
		!slices.Equal(resources, p.request.resources) || p.seen&(1<<j) != 0 {
		d.err = fmt.Errorf("%w: multi request %s: queue entry %s on %q does not fit", ErrCorrupt, base, id, name)
		return nil
	}
	p.seen |= 1 << j
	return p.request
}

// checkManyParts requires every multi request to be in all of its queues.
func checkManyParts(many map[LeaseID]*manyParts) error {
	for base, p := range many {
		if p.seen != 1<<len(p.request.resources)-1 {
			return fmt.Errorf("%w: multi request %s misses queue entries", ErrCorrupt, base)
		}
	}
	return nil
}

func appendBool(buf []byte, b bool) []byte {
	if b {
		return append(buf, 1)
	}
	return append(buf, 0)
}

func appendAttempts(buf []byte, as []attempt) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(as)))
	for _, a := range as {
		buf = append(buf, a.id[:]...)
		buf = appendString(buf, a.host)
		buf = binary.AppendUvarint(buf, a.incarnation)
		buf = binary.AppendVarint(buf, a.deadline)
	}
	return buf
}

func (d *decoder) attempts() []attempt {
	n := d.count(19)
	as := make([]attempt, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		var a attempt
		d.bytes(a.id[:])
		a.host = d.string()
		a.incarnation = d.uvarint()
		a.deadline = d.varint()
		as = append(as, a)
	}
	return as
}
