package wal

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// Record payload kinds. The first payload byte names the kind.
const (
	// kindEntries holds one StoreLogs batch, so a batch is atomic on
	// recovery and only the final record of the file can be torn.
	kindEntries byte = 1
	// kindDelete replays a DeleteRange(lo, hi).
	kindDelete byte = 2
	// kindReset replaces a shared-log group's whole log with its entries:
	// the live entries rewritten into a newer segment (shared_reclaim.go).
	kindReset byte = 3
)

const (
	// entryFixedBytes is an entry's size without Data and Extensions:
	// index, term, type, flags, appendedAt, data length, extensions length.
	entryFixedBytes    = 8 + 8 + 1 + 1 + 8 + 4 + 4
	entriesHeadBytes   = 1 + 4 // kind, count
	deletePayloadBytes = 1 + 8 + 8

	// flagAppendedAt is set when AppendedAt is not the zero time, whose
	// UnixNano is undefined.
	flagAppendedAt byte = 1
)

// record is a decoded payload: entries for kindEntries, [lo, hi] for
// kindDelete.
type record struct {
	kind    byte
	entries []raft.Log
	lo, hi  uint64
}

func entryBytes(l *raft.Log) int {
	return entryFixedBytes + len(l.Data) + len(l.Extensions)
}

func entriesPayloadBytes(batch []raft.Log) int {
	n := entriesHeadBytes
	for i := range batch {
		n += entryBytes(&batch[i])
	}
	return n
}

// putEntries encodes batch into p, which is exactly entriesPayloadBytes
// long, and repoints each entry's Data and Extensions into p (capacity
// clipped) so the store keeps one buffer per batch and no caller memory.
func putEntries(p []byte, batch []raft.Log) {
	p[0] = kindEntries
	binary.LittleEndian.PutUint32(p[1:], uint32(len(batch)))
	off := entriesHeadBytes
	for i := range batch {
		l := &batch[i]
		binary.LittleEndian.PutUint64(p[off:], l.Index)
		binary.LittleEndian.PutUint64(p[off+8:], l.Term)
		p[off+16] = byte(l.Type)
		var flags byte
		var nanos int64
		if !l.AppendedAt.IsZero() {
			flags, nanos = flagAppendedAt, l.AppendedAt.UnixNano()
		}
		p[off+17] = flags
		binary.LittleEndian.PutUint64(p[off+18:], uint64(nanos))
		off += 26
		l.Data, off = putBytes(p, off, l.Data)
		l.Extensions, off = putBytes(p, off, l.Extensions)
		l.AppendedAt = decodeTime(flags, nanos)
	}
}

// putBytes writes a length-prefixed b at p[off:] and returns the copy inside
// p (nil when empty, matching what decoding yields) and the next offset.
func putBytes(p []byte, off int, b []byte) ([]byte, int) {
	binary.LittleEndian.PutUint32(p[off:], uint32(len(b)))
	off += 4
	if len(b) == 0 {
		return nil, off
	}
	end := off + copy(p[off:], b)
	return p[off:end:end], end
}

func decodeTime(flags byte, nanos int64) time.Time {
	if flags&flagAppendedAt == 0 {
		return time.Time{}
	}
	return time.Unix(0, nanos)
}

func putDelete(p []byte, lo, hi uint64) {
	p[0] = kindDelete
	binary.LittleEndian.PutUint64(p[1:], lo)
	binary.LittleEndian.PutUint64(p[9:], hi)
}

// decodePayload parses a checksummed payload. The entries alias p. Any
// malformation is ErrCorrupt: the checksum passed, so the bytes are what a
// writer produced and cannot be explained by a torn write.
func decodePayload(p []byte) (record, error) {
	if len(p) == 0 {
		return record{}, fmt.Errorf("empty payload: %w", ErrCorrupt)
	}
	switch p[0] {
	case kindDelete:
		if len(p) != deletePayloadBytes {
			return record{}, fmt.Errorf("delete record of %d bytes: %w", len(p), ErrCorrupt)
		}
		return record{kind: kindDelete, lo: binary.LittleEndian.Uint64(p[1:]), hi: binary.LittleEndian.Uint64(p[9:])}, nil
	case kindEntries, kindReset:
		return decodeEntries(p)
	default:
		return record{}, fmt.Errorf("unknown record kind %d: %w", p[0], ErrCorrupt)
	}
}

func decodeEntries(p []byte) (record, error) {
	if len(p) < entriesHeadBytes {
		return record{}, fmt.Errorf("entries record of %d bytes: %w", len(p), ErrCorrupt)
	}
	count := binary.LittleEndian.Uint32(p[1:])
	// Bound the allocation by what the payload can hold.
	if count == 0 || uint64(count) > uint64(len(p)-entriesHeadBytes)/entryFixedBytes {
		return record{}, fmt.Errorf("entries record claims %d entries in %d bytes: %w", count, len(p), ErrCorrupt)
	}
	entries := make([]raft.Log, count)
	off := entriesHeadBytes
	for i := range entries {
		if len(p)-off < entryFixedBytes {
			return record{}, fmt.Errorf("entry %d truncated: %w", i, ErrCorrupt)
		}
		l := &entries[i]
		l.Index = binary.LittleEndian.Uint64(p[off:])
		l.Term = binary.LittleEndian.Uint64(p[off+8:])
		l.Type = raft.LogType(p[off+16])
		l.AppendedAt = decodeTime(p[off+17], int64(binary.LittleEndian.Uint64(p[off+18:])))
		off += 26
		var err error
		if l.Data, off, err = getBytes(p, off); err != nil {
			return record{}, fmt.Errorf("entry %d data: %w", i, err)
		}
		if l.Extensions, off, err = getBytes(p, off); err != nil {
			return record{}, fmt.Errorf("entry %d extensions: %w", i, err)
		}
	}
	if off != len(p) {
		return record{}, fmt.Errorf("%d trailing bytes after entries: %w", len(p)-off, ErrCorrupt)
	}
	return record{kind: p[0], entries: entries}, nil
}

// getBytes reads a log entry's length-prefixed field: nil when empty, and
// capped, so an append to it cannot run into the next field.
func getBytes(p []byte, off int) ([]byte, int, error) {
	b, off, err := getField(p, off)
	if len(b) == 0 {
		return nil, off, err
	}
	return b[:len(b):len(b)], off, nil
}

// getField reads a length-prefixed field, aliasing p. An empty field is
// not nil: the stable store's Get of an empty value is not "missing".
func getField(p []byte, off int) ([]byte, int, error) {
	if len(p)-off < 4 {
		return nil, off, fmt.Errorf("length truncated: %w", ErrCorrupt)
	}
	n := binary.LittleEndian.Uint32(p[off:])
	off += 4
	// Compare unsigned so a huge length cannot turn negative as an int.
	if uint64(n) > uint64(len(p)-off) {
		return nil, off, fmt.Errorf("length %d exceeds the %d bytes left: %w", n, len(p)-off, ErrCorrupt)
	}
	end := off + int(n)
	return p[off:end], end, nil
}

// encodeBatch copies logs (raft may reuse them once StoreLogs returns) and
// encodes them into a new buffer at offset headroom, after room for a
// header; the copies' Data and Extensions point into the buffer. A payload
// over maxPayload is ErrTooLarge.
func encodeBatch(logs []*raft.Log, headroom, maxPayload int) ([]raft.Log, []byte, error) {
	batch := make([]raft.Log, len(logs))
	for i, l := range logs {
		if l == nil {
			return nil, nil, fmt.Errorf("wal: nil log at batch position %d", i)
		}
		batch[i] = *l
	}
	payloadLen := entriesPayloadBytes(batch)
	if payloadLen > maxPayload {
		return nil, nil, fmt.Errorf("wal: batch of %d entries needs %d bytes: %w", len(batch), payloadLen, ErrTooLarge)
	}
	buf := make([]byte, headroom+payloadLen)
	putEntries(buf[headroom:], batch)
	return batch, buf, nil
}
