package link

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A frame is one message on a connection: a 4-byte big-endian length of
// what follows, a type byte, the call id (uvarint) and the payload:
//
//	request: kind (1 byte), group (uvarint), body
//	stream:  kind, group, stream size (uvarint), body; the stream's bytes
//	         follow the frame (on a connection of its own)
//	reply:   body
//	error:   message text
//	hello:   the dialling member's own address (its first frame), so the
//	         member it dialled sends its own calls back on the same
//	         connection
type frameType byte

const (
	frameRequest frameType = iota + 1
	frameStream
	frameReply
	frameError
	frameHello
)

// maxFrameDefault bounds a frame read from a peer: an AppendEntries of
// raft's MaxAppendEntries full batch entries fits.
const maxFrameDefault = 256 << 20

// frame is one decoded frame; its slices alias the frame's own buffer.
type frame struct {
	typ        frameType
	id         uint64
	kind       Kind
	group      uint64
	streamSize int64
	body       []byte
}

// appendFrame appends f to buf.
func appendFrame(buf []byte, f frame) []byte {
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0, byte(f.typ))
	buf = binary.AppendUvarint(buf, f.id)
	if f.typ == frameRequest || f.typ == frameStream {
		buf = append(buf, byte(f.kind))
		buf = binary.AppendUvarint(buf, f.group)
	}
	if f.typ == frameStream {
		buf = binary.AppendUvarint(buf, uint64(f.streamSize))
	}
	buf = append(buf, f.body...)
	binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-4))
	return buf
}

var errFrame = errors.New("link: malformed frame")

// readFrame reads one frame of at most maxFrame bytes.
func readFrame(r *bufio.Reader, maxFrame int) (frame, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n == 0 || int64(n) > int64(maxFrame) {
		return frame{}, fmt.Errorf("%w: length %d (at most %d)", errFrame, n, maxFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return frame{}, err
	}
	return parseFrame(b)
}

func parseFrame(b []byte) (frame, error) {
	f := frame{typ: frameType(b[0])}
	b = b[1:]
	var n int
	if f.id, n = binary.Uvarint(b); n <= 0 {
		return frame{}, fmt.Errorf("%w: call id", errFrame)
	}
	b = b[n:]
	switch f.typ {
	case frameRequest, frameStream:
		if len(b) == 0 {
			return frame{}, fmt.Errorf("%w: no kind", errFrame)
		}
		f.kind, b = Kind(b[0]), b[1:]
		if f.group, n = binary.Uvarint(b); n <= 0 {
			return frame{}, fmt.Errorf("%w: group", errFrame)
		}
		b = b[n:]
		if f.typ == frameStream {
			size, n := binary.Uvarint(b)
			if n <= 0 || size > 1<<62 {
				return frame{}, fmt.Errorf("%w: stream size", errFrame)
			}
			f.streamSize, b = int64(size), b[n:]
		}
	case frameReply, frameError, frameHello:
	default:
		return frame{}, fmt.Errorf("%w: type %d", errFrame, f.typ)
	}
	f.body = b
	return f, nil
}
