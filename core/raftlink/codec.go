package raftlink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// The RPCs travel in a hand-written binary form: a type byte, then every
// field of hashicorp/raft's struct in declaration order (unsigned integers
// as uvarints, signed as varints, byte slices length first, bools as a
// byte, times as a presence byte and Unix nanoseconds). TestCodecCoversEveryField
// fills every field by reflection, so a field added to raft's structs
// fails the test until it is carried here.
type rpcType byte

const (
	rpcAppendEntries rpcType = iota + 1
	rpcAppendEntriesResp
	rpcRequestVote
	rpcRequestVoteResp
	rpcRequestPreVote
	rpcRequestPreVoteResp
	rpcInstallSnapshot
	rpcInstallSnapshotResp
	rpcTimeoutNow
	rpcTimeoutNowResp
)

// errMalformed marks an RPC that does not decode.
var errMalformed = errors.New("raftlink: malformed rpc")

type writer struct{ b []byte }

func (w *writer) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *writer) varint(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *writer) bytes(v []byte)   { w.uvarint(uint64(len(v))); w.b = append(w.b, v...) }
func (w *writer) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}
func (w *writer) time(t time.Time) {
	if t.IsZero() {
		w.b = append(w.b, 0)
		return
	}
	w.b = append(w.b, 1)
	w.varint(t.UnixNano())
}
func (w *writer) header(h raft.RPCHeader) {
	w.varint(int64(h.ProtocolVersion))
	w.bytes(h.ID)
	w.bytes(h.Addr)
}

// reader decodes; the first error sticks and later reads give zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errMalformed, what)
	}
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes aliases the input (a frame's own buffer); nil for none, as raft
// sends them.
func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.fail("byte slice length")
		return nil
	}
	if n == 0 {
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail("byte")
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) bool() bool { return r.byte() != 0 }

func (r *reader) time() time.Time {
	if r.byte() == 0 {
		return time.Time{}
	}
	return time.Unix(0, r.varint())
}

func (r *reader) header() raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersion(r.varint()), ID: r.bytes(), Addr: r.bytes()}
}

func (r *reader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d trailing bytes", errMalformed, len(r.b))
	}
	return r.err
}

// encode appends the binary form of a raft RPC struct (a request or a
// response) to buf.
func encode(buf []byte, msg any) ([]byte, error) {
	w := writer{b: buf}
	switch m := msg.(type) {
	case *raft.AppendEntriesRequest:
		w.b = append(w.b, byte(rpcAppendEntries))
		w.header(m.RPCHeader)
		w.uvarint(m.Term)
		w.bytes(m.Leader) //nolint:staticcheck // raft still fills it
		w.uvarint(m.PrevLogEntry)
		w.uvarint(m.PrevLogTerm)
		w.uvarint(uint64(len(m.Entries)))
		for _, l := range m.Entries {
			w.uvarint(l.Index)
			w.uvarint(l.Term)
			w.b = append(w.b, byte(l.Type))
			w.bytes(l.Data)
			w.bytes(l.Extensions)
			w.time(l.AppendedAt)
		}
		w.uvarint(m.LeaderCommitIndex)
	case *raft.AppendEntriesResponse:
		w.b = append(w.b, byte(rpcAppendEntriesResp))
		w.header(m.RPCHeader)
		w.uvarint(m.Term)
		w.uvarint(m.LastLog)
		w.bool(m.Success)
		w.bool(m.NoRetryBackoff)
	case *raft.RequestVoteRequest:
		w.b = append(w.b, byte(rpcRequestVote))
		w.header(m.RPCHeader)
		w.uvarint(m.Term)
		w.bytes(m.Candidate) //nolint:staticcheck // raft still fills it
		w.uvarint(m.LastLogIndex)
		w.uvarint(m.LastLogTerm)
		w.bool(m.LeadershipTransfer)
	case *raft.RequestVoteResponse:
		w.b = append(w.b, byte(rpcRequestVoteResp))
		w.header(m.RPCHeader)
		w.uvarint(m.Term)
		w.bytes(m.Peers) //nolint:staticcheck // raft still fills it
		w.bool(m.Granted)
	case *raft.RequestPreVoteRequest:
		w.b = append(w.b, byte(rpcRequestPreVote))
		w.header(m.RPCHeader)
		w.uvarint(m.Term)
		w.uvarint(m.LastLogIndex)
		w.uvarint(m.LastLogTerm)
	case *raft.RequestPreVoteResponse:
		w.b = append(w.b, byte(rpcRequestPreVoteResp))
		w.header(m.RPCHeader)
		w.uvarint(m.Term)
		w.bool(m.Granted)
	case *raft.InstallSnapshotRequest:
		w.b = append(w.b, byte(rpcInstallSnapshot))
		w.header(m.RPCHeader)
		w.varint(int64(m.SnapshotVersion))
		w.uvarint(m.Term)
		w.bytes(m.Leader) //nolint:staticcheck // raft still fills it
		w.uvarint(m.LastLogIndex)
		w.uvarint(m.LastLogTerm)
		w.bytes(m.Peers) //nolint:staticcheck // raft still fills it
		w.bytes(m.Configuration)
		w.uvarint(m.ConfigurationIndex)
		w.varint(m.Size)
	case *raft.InstallSnapshotResponse:
		w.b = append(w.b, byte(rpcInstallSnapshotResp))
		w.header(m.RPCHeader)
		w.uvarint(m.Term)
		w.bool(m.Success)
	case *raft.TimeoutNowRequest:
		w.b = append(w.b, byte(rpcTimeoutNow))
		w.header(m.RPCHeader)
	case *raft.TimeoutNowResponse:
		w.b = append(w.b, byte(rpcTimeoutNowResp))
		w.header(m.RPCHeader)
	default:
		return buf, fmt.Errorf("raftlink: cannot encode %T", msg)
	}
	return w.b, nil
}

// maxEntries bounds the entries one AppendEntries may claim, so a garbled
// count cannot make the receiver allocate without bound (raft sends at
// most MaxAppendEntries, 1024 at most).
const maxEntries = 1 << 16

// decode parses what encode wrote into a fresh raft struct (a pointer).
func decode(b []byte) (any, error) {
	r := reader{b: b}
	var out any
	switch rpcType(r.byte()) {
	case rpcAppendEntries:
		m := &raft.AppendEntriesRequest{RPCHeader: r.header(), Term: r.uvarint(), Leader: r.bytes(), //nolint:staticcheck // raft still reads it
			PrevLogEntry: r.uvarint(), PrevLogTerm: r.uvarint()}
		n := r.uvarint()
		if n > maxEntries || n > uint64(len(r.b)) {
			r.fail("entry count")
		}
		if r.err == nil && n > 0 {
			logs := make([]raft.Log, n)
			m.Entries = make([]*raft.Log, n)
			for i := range logs {
				logs[i] = raft.Log{Index: r.uvarint(), Term: r.uvarint(), Type: raft.LogType(r.byte()),
					Data: r.bytes(), Extensions: r.bytes(), AppendedAt: r.time()}
				m.Entries[i] = &logs[i]
			}
		}
		m.LeaderCommitIndex = r.uvarint()
		out = m
	case rpcAppendEntriesResp:
		out = &raft.AppendEntriesResponse{RPCHeader: r.header(), Term: r.uvarint(), LastLog: r.uvarint(),
			Success: r.bool(), NoRetryBackoff: r.bool()}
	case rpcRequestVote:
		out = &raft.RequestVoteRequest{RPCHeader: r.header(), Term: r.uvarint(), Candidate: r.bytes(), //nolint:staticcheck // raft still reads it
			LastLogIndex: r.uvarint(), LastLogTerm: r.uvarint(), LeadershipTransfer: r.bool()}
	case rpcRequestVoteResp:
		out = &raft.RequestVoteResponse{RPCHeader: r.header(), Term: r.uvarint(), Peers: r.bytes(), Granted: r.bool()} //nolint:staticcheck // raft still reads it
	case rpcRequestPreVote:
		out = &raft.RequestPreVoteRequest{RPCHeader: r.header(), Term: r.uvarint(), LastLogIndex: r.uvarint(), LastLogTerm: r.uvarint()}
	case rpcRequestPreVoteResp:
		out = &raft.RequestPreVoteResponse{RPCHeader: r.header(), Term: r.uvarint(), Granted: r.bool()}
	case rpcInstallSnapshot:
		out = &raft.InstallSnapshotRequest{RPCHeader: r.header(), SnapshotVersion: raft.SnapshotVersion(r.varint()),
			Term: r.uvarint(), Leader: r.bytes(), LastLogIndex: r.uvarint(), LastLogTerm: r.uvarint(), //nolint:staticcheck // raft still reads it
			Peers: r.bytes(), Configuration: r.bytes(), ConfigurationIndex: r.uvarint(), Size: r.varint()} //nolint:staticcheck // raft still reads it
	case rpcInstallSnapshotResp:
		out = &raft.InstallSnapshotResponse{RPCHeader: r.header(), Term: r.uvarint(), Success: r.bool()}
	case rpcTimeoutNow:
		out = &raft.TimeoutNowRequest{RPCHeader: r.header()}
	case rpcTimeoutNowResp:
		out = &raft.TimeoutNowResponse{RPCHeader: r.header()}
	default:
		r.fail("rpc type")
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return out, nil
}
