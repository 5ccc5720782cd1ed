package codec

import (
	"encoding/binary"
	"fmt"

	"github.com/lockstep/lockstep/core/lock"
)

// commandVersion is the first byte of every encoded command, so the format
// can change without misreading old logs. Version 1 lacked the fields after
// RequestID, version 2 Resources, version 3 Quota, version 4 GraceMs and
// Permits; they still decode, with those zero. A command is written in the
// oldest version that holds it, so members that predate a field read
// every command that does not use it.
const commandVersion = 5

// AppendCommand appends the binary form of cmd to buf. The format is
// hand-written (no reflection) because it is on the hot path of every write.
func AppendCommand(buf []byte, cmd *lock.Command) []byte {
	version := byte(commandVersion)
	switch {
	case cmd.GraceMs != 0 || cmd.Permits != 0:
	case !cmd.Quota.IsZero():
		version = 4
	default:
		version = 3
	}
	buf = append(buf, version, byte(cmd.Op), byte(cmd.Mode), byte(cmd.Policy))
	buf = binary.AppendVarint(buf, cmd.Mono)
	buf = binary.AppendVarint(buf, cmd.TTLMs)
	buf = binary.AppendVarint(buf, cmd.WaitMs)
	buf = append(buf, cmd.LeaseID[:]...)
	buf = lock.AppendString(buf, cmd.Resource)
	buf = lock.AppendString(buf, cmd.ClientID)
	buf = lock.AppendString(buf, cmd.RequestID)
	buf = append(buf, cmd.Owner[:]...)
	buf = lock.AppendString(buf, cmd.Host)
	buf = binary.AppendUvarint(buf, cmd.Incarnation)
	buf = binary.AppendUvarint(buf, uint64(len(cmd.Suspects)))
	for _, h := range cmd.Suspects {
		buf = lock.AppendString(buf, h)
	}
	var flags byte
	if cmd.CallerGone {
		flags |= 1
	}
	if cmd.Deadlock {
		flags |= 2
	}
	buf = append(buf, flags)
	buf = lock.AppendStrings(buf, cmd.Resources)
	if version < 4 {
		return buf
	}
	for _, v := range [4]uint32{cmd.Quota.Held, cmd.Quota.Queued, cmd.Quota.ClientHeld, cmd.Quota.ClientQueued} {
		buf = binary.AppendUvarint(buf, uint64(v))
	}
	if version < 5 {
		return buf
	}
	buf = binary.AppendVarint(buf, cmd.GraceMs)
	return binary.AppendUvarint(buf, uint64(cmd.Permits))
}

// DecodeCommand parses what AppendCommand wrote.
func DecodeCommand(b []byte) (lock.Command, error) {
	var cmd lock.Command
	d := lock.NewReader(b)
	v := d.Byte()
	if v < 1 || v > commandVersion {
		return cmd, fmt.Errorf("%w: command version %d", lock.ErrCorrupt, v)
	}
	cmd.Op = lock.Op(d.Byte())
	cmd.Mode = lock.Mode(d.Byte())
	cmd.Policy = lock.Policy(d.Byte())
	cmd.Mono = d.Varint()
	cmd.TTLMs = d.Varint()
	cmd.WaitMs = d.Varint()
	d.Bytes(cmd.LeaseID[:])
	cmd.Resource = d.Text()
	cmd.ClientID = d.Text()
	cmd.RequestID = d.Text()
	if v >= 2 {
		d.Bytes(cmd.Owner[:])
		cmd.Host = d.Text()
		cmd.Incarnation = d.Uvarint()
		n := d.Count(1)
		for i := 0; i < n && d.OK(); i++ {
			cmd.Suspects = append(cmd.Suspects, d.Text())
		}
		flags := d.Byte()
		cmd.CallerGone = flags&1 != 0
		cmd.Deadlock = flags&2 != 0
	}
	if v >= 3 {
		cmd.Resources = d.Strings()
	}
	if v >= 4 {
		for _, dst := range []*uint32{&cmd.Quota.Held, &cmd.Quota.Queued, &cmd.Quota.ClientHeld, &cmd.Quota.ClientQueued} {
			*dst = d.Uint32()
		}
	}
	if v >= 5 {
		cmd.GraceMs = d.Varint()
		cmd.Permits = d.Uint32()
	}
	return cmd, d.End()
}
