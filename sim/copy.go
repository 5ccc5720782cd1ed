package sim

import (
	"bytes"
	"fmt"

	"github.com/hashicorp/raft"
)

// copyMessage deep-copies one of raft's RPC request or response structs so
// that the two ends of a simulated link never share memory, as on a real
// wire (raft.InmemTransport passes pointers through, letting a receiver
// alias the sender's log entries). A hand-written copy is several times
// cheaper than a msgpack round trip; TestCopyMessageIsDeep guards it against
// new reference fields. Only raft's RPC types reach it, so any other type is
// a programming error and panics.
func copyMessage(v any) any {
	switch m := v.(type) {
	case *raft.AppendEntriesRequest:
		c := *m
		c.RPCHeader = copyHeader(m.RPCHeader)
		c.Leader = bytes.Clone(m.Leader)
		c.Entries = copyLogs(m.Entries)
		return &c
	case *raft.AppendEntriesResponse:
		c := *m
		c.RPCHeader = copyHeader(m.RPCHeader)
		return &c
	case *raft.RequestVoteRequest:
		c := *m
		c.RPCHeader = copyHeader(m.RPCHeader)
		c.Candidate = bytes.Clone(m.Candidate)
		return &c
	case *raft.RequestVoteResponse:
		c := *m
		c.RPCHeader = copyHeader(m.RPCHeader)
		c.Peers = bytes.Clone(m.Peers)
		return &c
	case *raft.RequestPreVoteRequest:
		c := *m
		c.RPCHeader = copyHeader(m.RPCHeader)
		return &c
	case *raft.RequestPreVoteResponse:
		c := *m
		c.RPCHeader = copyHeader(m.RPCHeader)
		return &c
	case *raft.InstallSnapshotRequest:
		c := *m
		c.RPCHeader = copyHeader(m.RPCHeader)
		c.Leader = bytes.Clone(m.Leader)
		c.Peers = bytes.Clone(m.Peers)
		c.Configuration = bytes.Clone(m.Configuration)
		return &c
	case *raft.InstallSnapshotResponse:
		c := *m
		c.RPCHeader = copyHeader(m.RPCHeader)
		return &c
	case *raft.TimeoutNowRequest:
		c := *m
		c.RPCHeader = copyHeader(m.RPCHeader)
		return &c
	case *raft.TimeoutNowResponse:
		c := *m
		c.RPCHeader = copyHeader(m.RPCHeader)
		return &c
	default:
		panic(fmt.Sprintf("sim: cannot copy RPC message %T", v))
	}
}

func copyHeader(h raft.RPCHeader) raft.RPCHeader {
	h.ID = bytes.Clone(h.ID)
	h.Addr = bytes.Clone(h.Addr)
	return h
}

func copyLogs(logs []*raft.Log) []*raft.Log {
	if logs == nil {
		return nil
	}
	out := make([]*raft.Log, len(logs))
	for i, l := range logs {
		c := *l
		c.Data = bytes.Clone(l.Data)
		c.Extensions = bytes.Clone(l.Extensions)
		out[i] = &c
	}
	return out
}
