package lock

import (
	"encoding/binary"
	"fmt"
)

// resultVersion 1 lacked Leases and Blocked; it still decodes.
const resultVersion = 2

// AppendResult appends the binary form of res: a follower forwards a command
// to the leader and gets the leader's Result back in this form.
func AppendResult(buf []byte, res *Result) []byte {
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
	buf = append(buf, resultVersion, byte(res.Code), flags)
	buf = binary.AppendUvarint(buf, uint64(res.Position))
	buf = binary.AppendVarint(buf, res.LogTime)
	buf = appendLease(buf, res.Lease)
	if res.Status != nil {
		st := res.Status
		buf = appendString(buf, st.Resource)
		buf = binary.AppendUvarint(buf, uint64(len(st.Holders)))
		for _, h := range st.Holders {
			buf = appendLease(buf, h)
		}
		buf = binary.AppendUvarint(buf, uint64(len(st.Queue)))
		for _, w := range st.Queue {
			buf = append(buf, w.ID[:]...)
			buf = append(buf, byte(w.Mode))
			buf = binary.AppendVarint(buf, w.Deadline)
			buf = appendString(buf, w.ClientID)
		}
	}
	buf = binary.AppendUvarint(buf, uint64(len(res.Leases)))
	for _, l := range res.Leases {
		buf = appendLease(buf, l)
	}
	return appendString(buf, res.Blocked)
}

// DecodeResult parses what AppendResult wrote.
func DecodeResult(b []byte) (Result, error) {
	var res Result
	d := decoder{b: b}
	v := d.byte()
	if v != 1 && v != resultVersion {
		return res, fmt.Errorf("%w: result version %d", ErrCorrupt, v)
	}
	res.Code = Code(d.byte())
	flags := d.byte()
	res.Granted = flags&1 != 0
	res.Queued = flags&2 != 0
	res.Position = int(d.uvarint())
	res.LogTime = d.varint()
	res.Lease = d.lease()
	if flags&4 != 0 {
		st := &Status{Resource: d.string()}
		nh := d.count(20)
		for i := 0; i < nh && d.err == nil; i++ {
			st.Holders = append(st.Holders, d.lease())
		}
		nq := d.count(19)
		for i := 0; i < nq && d.err == nil; i++ {
			var w Waiter
			d.bytes(w.ID[:])
			w.Mode = Mode(d.byte())
			w.Deadline = d.varint()
			w.ClientID = d.string()
			st.Queue = append(st.Queue, w)
		}
		res.Status = st
	}
	if v >= 2 {
		nl := d.count(20)
		for i := 0; i < nl && d.err == nil; i++ {
			res.Leases = append(res.Leases, d.lease())
		}
		res.Blocked = d.string()
	}
	if d.err == nil && d.off != len(b) {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(b)-d.off)
	}
	return res, d.err
}
