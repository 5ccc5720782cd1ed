package codec

import (
	"encoding/binary"
	"fmt"

	"github.com/lockstep/lockstep/core/lock"
)

// entryBatch is the first byte of a batch entry. It is above every command
// version, so the first byte of a log entry tells a batch from the single
// command entries written before batching, which still decode.
const entryBatch = 0x40

// MaxEntryCommands bounds the commands of one entry, so a corrupt count
// cannot make a replica loop for long, and one entry stays a modest write.
const MaxEntryCommands = 4096

// Stamp is what the leader adds to an entry as it proposes it: its
// monotonic clock reading, which becomes the log time of every command in
// the entry, and the members it has not reached for a while (whose queued
// requests the entry's commands cancel instead of granting).
type Stamp struct {
	Mono     int64
	Suspects []string
}

// AppendEntry appends a batch entry of cmds, each the bytes AppendCommand
// wrote on the member that took the request (their own Mono and Suspects
// are ignored: the stamp is the leader's), under stamp. The commands are
// copied as they are: nothing is decoded or encoded again.
func AppendEntry(buf []byte, stamp Stamp, cmds [][]byte) []byte {
	buf = append(buf, entryBatch)
	buf = binary.AppendVarint(buf, stamp.Mono)
	buf = lock.AppendStrings(buf, stamp.Suspects)
	buf = binary.AppendUvarint(buf, uint64(len(cmds)))
	for _, c := range cmds {
		buf = binary.AppendUvarint(buf, uint64(len(c)))
		buf = append(buf, c...)
	}
	return buf
}

// Entry is a decoded log entry: its stamp and its commands, still encoded.
type Entry struct {
	Stamp Stamp
	// Commands alias the entry's bytes, in log order.
	Commands [][]byte
	// Single marks an entry written before batching: one command carrying
	// its own Mono and Suspects.
	Single bool
}

// DecodeEntry splits a log entry into its commands. A damaged header fails
// the whole entry; a damaged command fails only itself, in Command.
func DecodeEntry(b []byte) (Entry, error) {
	if len(b) > 0 && b[0] != entryBatch {
		return Entry{Commands: [][]byte{b}, Single: true}, nil
	}
	r := lock.NewReader(b)
	if v := r.Byte(); r.OK() && v != entryBatch {
		return Entry{}, fmt.Errorf("%w: entry format %d", lock.ErrCorrupt, v)
	}
	e := Entry{Stamp: Stamp{Mono: r.Varint(), Suspects: r.Strings()}}
	n := r.Count(1)
	if n > MaxEntryCommands {
		return Entry{}, fmt.Errorf("%w: entry of %d commands (at most %d)", lock.ErrCorrupt, n, MaxEntryCommands)
	}
	e.Commands = make([][]byte, 0, n)
	for i := 0; i < n && r.OK(); i++ {
		size := r.Count(1)
		e.Commands = append(e.Commands, r.Slice(size))
	}
	if err := r.End(); err != nil {
		return Entry{}, fmt.Errorf("entry: %w", err)
	}
	return e, nil
}

// Command decodes command i with the entry's stamp in place.
func (e Entry) Command(i int) (lock.Command, error) {
	cmd, err := DecodeCommand(e.Commands[i])
	if err != nil || e.Single {
		return cmd, err
	}
	cmd.Mono, cmd.Suspects = e.Stamp.Mono, e.Stamp.Suspects
	return cmd, nil
}
