package lock

// The primitives every encoding of lockstep is built from (snapshots here;
// commands, results and log entries in core/codec, through wire.go).

import (
	"encoding/binary"
	"fmt"
)

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// decoder reads the encodings of this package; the first error sticks and
// later reads return zero values, so callers check once at the end.
type decoder struct {
	b   []byte
	off int
	err error
	// version is the snapshot format being read (0 outside snapshots).
	version int
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated %s at byte %d", ErrCorrupt, what, d.off)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || d.off >= len(d.b) {
		d.fail("byte")
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.off += n
	return v
}

// uint32 reads a uvarint that must fit in 32 bits.
func (d *decoder) uint32() uint32 {
	v := d.uvarint()
	if d.err == nil && v > 1<<32-1 {
		d.err = fmt.Errorf("%w: %d overflows 32 bits", ErrCorrupt, v)
	}
	return uint32(v)
}

func (d *decoder) bytes(dst []byte) {
	if d.err != nil || len(d.b)-d.off < len(dst) {
		d.fail("bytes")
		return
	}
	copy(dst, d.b[d.off:])
	d.off += len(dst)
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if uint64(len(d.b)-d.off) < n {
		d.fail("string")
		return ""
	}
	s := string(d.b[d.off : d.off+int(n)])
	d.off += int(n)
	return s
}

// count reads a length that must not exceed what the rest of the input could
// hold (each item takes at least minBytes), so corrupt input cannot make us
// allocate without bound.
func (d *decoder) count(minBytes int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)-d.off)/uint64(minBytes) {
		d.err = fmt.Errorf("%w: count %d exceeds input", ErrCorrupt, n)
	}
	if d.err != nil {
		return 0
	}
	return int(n)
}
