package codec

import (
	"encoding/binary"
	"fmt"

	"github.com/lockstep/lockstep/core/lock"
)

// A result is what applying one command answered, as a leader sends it back
// to the member that forwarded the command. resultVersion 1 lacked Leases
// and Blocked, version 2 the status's Permits, version 3 a deadlock's
// Cycle; they still decode, so members of both versions can forward to
// each other during an upgrade. A result is written in the oldest version
// that holds it: version 3 only for a semaphore's status (or a mismatch
// naming one), version 4 only for a deadlock's cycle (after the permits,
// which it carries only with a status), version 5 (all of 4, then every
// lease's grace window) only when a lease has a grace window.
const resultVersion = 5

// resultLeases calls fn on every lease of res in encoding order: Lease,
// the status holders, then Leases.
func resultLeases(res *lock.Result, fn func(l *lock.Lease)) {
	fn(&res.Lease)
	if res.Status != nil {
		for i := range res.Status.Holders {
			fn(&res.Status.Holders[i])
		}
	}
	for i := range res.Leases {
		fn(&res.Leases[i])
	}
}

// AppendResult appends the binary form of res.
func AppendResult(buf []byte, res *lock.Result) []byte {
	flags := byte(0)
	if res.Granted {
		flags |= 1
	}
	if res.Queued {
		flags |= 2
	}
	if res.Status != nil {
		flags |= 4
	}
	version := byte(2)
	if res.Status != nil && res.Status.Permits != 0 {
		version = 3
	}
	if len(res.Cycle) > 0 {
		version = 4
	}
	resultLeases(res, func(l *lock.Lease) {
		if l.GraceMs != 0 {
			version = 5
		}
	})
	buf = append(buf, version, byte(res.Code), flags)
	buf = binary.AppendUvarint(buf, uint64(res.Position))
	buf = binary.AppendVarint(buf, res.LogTime)
	buf = lock.AppendLease(buf, res.Lease)
	if res.Status != nil {
		st := res.Status
		buf = lock.AppendString(buf, st.Resource)
		buf = binary.AppendUvarint(buf, uint64(len(st.Holders)))
		for _, h := range st.Holders {
			buf = lock.AppendLease(buf, h)
		}
		buf = binary.AppendUvarint(buf, uint64(len(st.Queue)))
		for _, w := range st.Queue {
			buf = append(buf, w.ID[:]...)
			buf = append(buf, byte(w.Mode))
			buf = binary.AppendVarint(buf, w.Deadline)
			buf = lock.AppendString(buf, w.ClientID)
		}
	}
	buf = binary.AppendUvarint(buf, uint64(len(res.Leases)))
	for _, l := range res.Leases {
		buf = lock.AppendLease(buf, l)
	}
	buf = lock.AppendString(buf, res.Blocked)
	if version < 3 {
		return buf
	}
	if res.Status != nil {
		buf = binary.AppendUvarint(buf, uint64(res.Status.Permits))
	}
	if version < 4 {
		return buf
	}
	buf = lock.AppendStrings(buf, res.Cycle)
	if version < 5 {
		return buf
	}
	// Every lease's grace window, in resultLeases order.
	resultLeases(res, func(l *lock.Lease) {
		buf = binary.AppendVarint(buf, l.GraceMs)
		buf = binary.AppendVarint(buf, l.GraceUntil)
	})
	return buf
}

// DecodeResult parses what AppendResult wrote; damage is lock.ErrCorrupt.
func DecodeResult(b []byte) (lock.Result, error) {
	var res lock.Result
	r := lock.NewReader(b)
	v := r.Byte()
	if v < 1 || v > resultVersion {
		return res, fmt.Errorf("%w: result version %d", lock.ErrCorrupt, v)
	}
	res.Code = lock.Code(r.Byte())
	flags := r.Byte()
	res.Granted = flags&1 != 0
	res.Queued = flags&2 != 0
	res.Position = int(r.Uvarint())
	res.LogTime = r.Varint()
	res.Lease = r.Lease()
	if flags&4 != 0 {
		st := &lock.Status{Resource: r.Text()}
		nh := r.Count(20)
		for i := 0; i < nh && r.OK(); i++ {
			st.Holders = append(st.Holders, r.Lease())
		}
		nq := r.Count(19)
		for i := 0; i < nq && r.OK(); i++ {
			var w lock.Waiter
			r.Bytes(w.ID[:])
			w.Mode = lock.Mode(r.Byte())
			w.Deadline = r.Varint()
			w.ClientID = r.Text()
			st.Queue = append(st.Queue, w)
		}
		res.Status = st
	}
	if v >= 2 {
		nl := r.Count(20)
		for i := 0; i < nl && r.OK(); i++ {
			res.Leases = append(res.Leases, r.Lease())
		}
		res.Blocked = r.Text()
	}
	if v == 3 && res.Status == nil {
		return res, fmt.Errorf("%w: result version 3 without a status", lock.ErrCorrupt)
	}
	if v >= 3 && res.Status != nil {
		res.Status.Permits = r.Uint32()
	}
	if v >= 4 {
		res.Cycle = r.Strings()
	}
	if v >= 5 && r.OK() {
		resultLeases(&res, func(l *lock.Lease) {
			l.GraceMs, l.GraceUntil = r.Varint(), r.Varint()
		})
	}
	return res, r.End()
}
