package lock

import (
	"encoding/binary"
	"fmt"
)

// commandVersion is the first byte of every encoded command, so the format
// can change without misreading old logs. Version 1 lacked the fields after
// RequestID, version 2 Resources, version 3 Quota; they still decode, with
// those zero. A command without a quota is still written as version 3, so
// members that predate quotas read it.
const commandVersion = 4

// AppendCommand appends the binary form of cmd to buf. The format is
// hand-written (no reflection) because it is on the hot path of every write.
func AppendCommand(buf []byte, cmd *Command) []byte {
	version := byte(commandVersion)
	if cmd.Quota.IsZero() {
		version = 3
	}
	buf = append(buf, version, byte(cmd.Op), byte(cmd.Mode), byte(cmd.Policy))
	buf = binary.AppendVarint(buf, cmd.Mono)
	buf = binary.AppendVarint(buf, cmd.TTLMs)
	buf = binary.AppendVarint(buf, cmd.WaitMs)
	buf = append(buf, cmd.LeaseID[:]...)
	buf = appendString(buf, cmd.Resource)
	buf = appendString(buf, cmd.ClientID)
	buf = appendString(buf, cmd.RequestID)
	buf = append(buf, cmd.Owner[:]...)
	buf = appendString(buf, cmd.Host)
	buf = binary.AppendUvarint(buf, cmd.Incarnation)
	buf = binary.AppendUvarint(buf, uint64(len(cmd.Suspects)))
	for _, h := range cmd.Suspects {
		buf = appendString(buf, h)
	}
	var flags byte
	if cmd.CallerGone {
		flags |= 1
	}
	buf = append(buf, flags)
	buf = appendStrings(buf, cmd.Resources)
	if version < 4 {
		return buf
	}
	for _, v := range [4]uint32{cmd.Quota.Held, cmd.Quota.Queued, cmd.Quota.ClientHeld, cmd.Quota.ClientQueued} {
		buf = binary.AppendUvarint(buf, uint64(v))
	}
	return buf
}

// DecodeCommand parses what AppendCommand wrote.
func DecodeCommand(b []byte) (Command, error) {
	var cmd Command
	d := decoder{b: b}
	v := d.byte()
	if v < 1 || v > commandVersion {
		return cmd, fmt.Errorf("%w: command version %d", ErrCorrupt, v)
	}
	cmd.Op = Op(d.byte())
	cmd.Mode = Mode(d.byte())
	cmd.Policy = Policy(d.byte())
	cmd.Mono = d.varint()
	cmd.TTLMs = d.varint()
	cmd.WaitMs = d.varint()
	d.bytes(cmd.LeaseID[:])
	cmd.Resource = d.string()
	cmd.ClientID = d.string()
	cmd.RequestID = d.string()
	if v >= 2 {
		d.bytes(cmd.Owner[:])
		cmd.Host = d.string()
		cmd.Incarnation = d.uvarint()
		n := d.count(1)
		for i := 0; i < n && d.err == nil; i++ {
			cmd.Suspects = append(cmd.Suspects, d.string())
		}
		cmd.CallerGone = d.byte()&1 != 0
	}
	if v >= 3 {
		cmd.Resources = d.strings()
	}
	if v >= 4 {
		for _, dst := range []*uint32{&cmd.Quota.Held, &cmd.Quota.Queued, &cmd.Quota.ClientHeld, &cmd.Quota.ClientQueued} {
			*dst = d.uint32()
		}
	}
	return cmd, d.end()
}

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
