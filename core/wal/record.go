package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// A record on disk is [u32 length][u32 crc32c][payload], little endian. The
// checksum covers the length bytes too, so a flipped length bit is caught
// like a flipped payload bit.
const (
	headerBytes = 8
	// maxRecordBytes bounds one payload: a larger length field can only be
	// damage, and it bounds the allocation recovery makes per record.
	maxRecordBytes = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32Castagnoli(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

func checksum(lengthBytes, payload []byte) uint32 {
	return crc32.Update(crc32.Checksum(lengthBytes, castagnoli), castagnoli, payload)
}

// seal fills in the header of frame, whose payload is already at
// frame[headerBytes:].
func seal(frame []byte) {
	binary.LittleEndian.PutUint32(frame, uint32(len(frame)-headerBytes))
	binary.LittleEndian.PutUint32(frame[4:], checksum(frame[:4], frame[headerBytes:]))
}

// scanRecords reads the records of a file of size bytes in order and hands
// each checksummed payload to apply, whose errors must say ErrCorrupt. It returns the length of the valid prefix and, when that
// is shorter than size, why the rest is a torn tail.
//
// Only the last write can be torn (every write is synced before the next),
// and each StoreLogs is one record, so a torn tail is: a short header, a
// record running past EOF, a checksum failure on the record that ends
// exactly at EOF, or a zero-filled rest of file (the size reached disk
// before the data). Any other failure is ErrCorrupt.
func scanRecords(r io.ReaderAt, size int64, apply func(payload []byte) error) (valid int64, tornWhy string, err error) {
	br := bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 1<<20)
	var hdr [headerBytes]byte
	off := int64(0)
	// Each pass consumes at least one whole record or returns.
	for off < size {
		left := size - off
		if left < headerBytes {
			return off, "short record header", nil
		}
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return off, "", fmt.Errorf("read record header at offset %d: %w", off, err)
		}
		n := binary.LittleEndian.Uint32(hdr[:])
		if n == 0 || n > maxRecordBytes {
			zero, err := restIsZero(hdr[:], br)
			if err != nil {
				return off, "", fmt.Errorf("read tail at offset %d: %w", off, err)
			}
			if zero {
				return off, "zero-filled tail", nil
			}
			return off, "", fmt.Errorf("record length %d at offset %d: %w", n, off, ErrCorrupt)
		}
		if int64(n) > left-headerBytes {
			return off, "record runs past end of file", nil
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(br, payload); err != nil {
			return off, "", fmt.Errorf("read record at offset %d: %w", off, err)
		}
		end := off + headerBytes + int64(n)
		if checksum(hdr[:4], payload) != binary.LittleEndian.Uint32(hdr[4:]) {
			if end == size {
				return off, "checksum mismatch in last record", nil
			}
			return off, "", fmt.Errorf("checksum mismatch in record at offset %d with %d bytes after it: %w", off, size-end, ErrCorrupt)
		}
		if err := apply(payload); err != nil {
			return off, "", fmt.Errorf("record at offset %d: %w", off, err)
		}
		off = end
	}
	return off, "", nil
}

// restIsZero reports whether head and everything left in r are zero bytes.
func restIsZero(head []byte, r io.Reader) (bool, error) {
	for _, b := range head {
		if b != 0 {
			return false, nil
		}
	}
	var buf [32 << 10]byte
	for {
		n, err := r.Read(buf[:])
		for _, b := range buf[:n] {
			if b != 0 {
				return false, nil
			}
		}
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
}
