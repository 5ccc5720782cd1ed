package lock

import "fmt"

// core/codec encodes commands, results and log entries with the same
// primitives as this package's snapshots; these exports are those
// primitives, so there is one implementation of each.

// AppendString appends s, length first.
func AppendString(buf []byte, s string) []byte { return appendString(buf, s) }

// AppendStrings appends list, count first.
func AppendStrings(buf []byte, list []string) []byte { return appendStrings(buf, list) }

// AppendLease appends l as snapshots hold it.
func AppendLease(buf []byte, l Lease) []byte { return appendLease(buf, l) }

// Reader reads what the Append functions and encoding/binary's varints
// wrote. The first error (wrapping ErrCorrupt) sticks and later reads
// return zero values, so a caller checks once, with End.
type Reader struct{ d decoder }

// NewReader reads b from its start.
func NewReader(b []byte) *Reader { return &Reader{d: decoder{b: b}} }

// Byte reads one byte.
func (r *Reader) Byte() byte { return r.d.byte() }

// Uvarint reads what binary.AppendUvarint wrote.
func (r *Reader) Uvarint() uint64 { return r.d.uvarint() }

// Varint reads what binary.AppendVarint wrote.
func (r *Reader) Varint() int64 { return r.d.varint() }

// Uint32 reads a uvarint that must fit in 32 bits.
func (r *Reader) Uint32() uint32 { return r.d.uint32() }

// Strings reads what AppendStrings wrote (nil for none).
func (r *Reader) Strings() []string { return r.d.strings() }

// Rest returns the unread bytes (aliasing the input) and reads them all.
func (r *Reader) Rest() []byte {
	if r.d.err != nil {
		return nil
	}
	b := r.d.b[r.d.off:]
	r.d.off = len(r.d.b)
	return b
}

// Slice reads n bytes and returns them aliasing the input.
func (r *Reader) Slice(n int) []byte {
	if r.d.err != nil || n < 0 || len(r.d.b)-r.d.off < n {
		r.d.fail("bytes")
		return nil
	}
	b := r.d.b[r.d.off : r.d.off+n : r.d.off+n]
	r.d.off += n
	return b
}

// Bytes fills dst.
func (r *Reader) Bytes(dst []byte) { r.d.bytes(dst) }

// Text reads what AppendString wrote.
func (r *Reader) Text() string { return r.d.string() }

// Lease reads what AppendLease wrote.
func (r *Reader) Lease() Lease { return r.d.lease() }

// Count reads a length that must not exceed what the rest of the input
// could hold, each item taking at least minBytes.
func (r *Reader) Count(minBytes int) int { return r.d.count(minBytes) }

// OK reports that no read has failed yet.
func (r *Reader) OK() bool { return r.d.err == nil }

// End returns the first error, or one for bytes left unread.
func (r *Reader) End() error { return r.d.end() }

// end is the verdict on a whole input: the first error, or trailing bytes.
func (d *decoder) end() error {
	if d.err == nil && d.off != len(d.b) {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(d.b)-d.off)
	}
	return d.err
}
