package sim

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"
)

// pairOfTransports registers transports a and b on a fresh network and
// closes everything when the bubble's test ends.
func pairOfTransports(t *testing.T, opts Options) (*Network, *Transport, *Transport) {
	t.Helper()
	n := NewNetwork(opts)
	a, err := n.NewTransport("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := n.NewTransport("b")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Close()
		b.Close()
		n.Close()
	})
	return n, a, b
}

// serveOne answers the next RPC on tr with resp (or err), after letting f
// inspect and scribble on it.
func serveOne(tr *Transport, resp any, err error, f func(raft.RPC)) {
	go func() {
		rpc := <-tr.Consumer()
		f(rpc)
		rpc.Respond(resp, err)
	}()
}

// Goal: the receiver cannot corrupt the sender's data. Method: the receiver
// scribbles on the request's log entry; the sender's request must keep its
// value and the response must arrive intact.
func TestTransportCopiesMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, a, b := pairOfTransports(t, Options{Link: simLink})
		args := &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{Addr: []byte("a")}, Term: 3, PrevLogEntry: 7, PrevLogTerm: 2,
			Entries: []*raft.Log{{Index: 8, Term: 3, Type: raft.LogCommand, Data: []byte("abc")}}, LeaderCommitIndex: 7,
		}
		sent := &raft.AppendEntriesResponse{Term: 3, LastLog: 8, Success: true}
		var got *raft.AppendEntriesRequest
		serveOne(b, sent, nil, func(rpc raft.RPC) {
			got = rpc.Command.(*raft.AppendEntriesRequest)
			if string(got.Entries[0].Data) != "abc" || got.PrevLogEntry != 7 {
				t.Errorf("receiver got %+v", got)
			}
			got.Entries[0].Data[0] = 'X'
		})
		var resp raft.AppendEntriesResponse
		if err := a.AppendEntries("b", "b", args, &resp); err != nil {
			t.Fatal(err)
		}
		if string(args.Entries[0].Data) != "abc" {
			t.Fatalf("sender's entry became %q", args.Entries[0].Data)
		}
		if !resp.Success || resp.LastLog != 8 || resp.Term != 3 {
			t.Fatalf("response %+v", resp)
		}
	})
}

// Goal: heartbeats take the fast path like raft.NetworkTransport. Method:
// set a heartbeat handler and send a heartbeat-shaped AppendEntries.
func TestTransportHeartbeatFastPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, a, b := pairOfTransports(t, Options{})
		b.SetHeartbeatHandler(func(rpc raft.RPC) {
			rpc.Respond(&raft.AppendEntriesResponse{Term: 9, Success: true}, nil)
		})
		hb := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte("a")}, Term: 9}
		var resp raft.AppendEntriesResponse
		if err := a.AppendEntries("b", "b", hb, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Term != 9 || len(b.Consumer()) != 0 {
			t.Fatalf("response %+v, %d queued on the consumer", resp, len(b.Consumer()))
		}
	})
}

// Goal: InstallSnapshot carries the data and raft's error text. Method: the
// receiver reads the snapshot and answers with an error.
func TestTransportInstallSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, a, b := pairOfTransports(t, Options{})
		data := "snapshot-bytes"
		serveOne(b, &raft.InstallSnapshotResponse{Term: 4}, errors.New("disk full"), func(rpc raft.RPC) {
			got, err := io.ReadAll(rpc.Reader)
			if err != nil || string(got) != data {
				t.Errorf("receiver read %q, %v", got, err)
			}
		})
		var resp raft.InstallSnapshotResponse
		err := a.InstallSnapshot("b", "b", &raft.InstallSnapshotRequest{Term: 4, Size: int64(len(data))}, &resp, strings.NewReader(data))
		if err == nil || err.Error() != "disk full" || resp.Term != 4 {
			t.Fatalf("got %+v, %v; want term 4 and the remote error", resp, err)
		}
	})
}

// Goal: each failed RPC returns its documented error after the RPC timeout.
// Method: a table of faults, each timed in virtual time.
func TestTransportFailures(t *testing.T) {
	const timeout = 700 * time.Millisecond
	tests := []struct {
		name  string
		setup func(n *Network, a, b *Transport)
		want  error
		took  time.Duration
	}{
		{"random loss", func(n *Network, _, _ *Transport) { n.SetLink("b", "a", Link{DropRate: 1}) }, ErrTimeout, timeout},
		{"target closed", func(_ *Network, _, b *Transport) { b.Close() }, ErrUnreachable, timeout},
		{"route disconnected", func(_ *Network, a, _ *Transport) { a.Disconnect("b") }, ErrUnreachable, timeout},
		{"all routes disconnected", func(_ *Network, a, _ *Transport) { a.DisconnectAll() }, ErrUnreachable, timeout},
		{"reconnected", func(_ *Network, a, _ *Transport) { a.DisconnectAll(); a.Connect("b", nil) }, nil, 0},
		{"local transport closed", func(_ *Network, a, _ *Transport) { a.Close() }, raft.ErrTransportShutdown, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n, a, b := pairOfTransports(t, Options{RPCTimeout: timeout})
				b.SetHeartbeatHandler(func(rpc raft.RPC) { rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil) })
				tc.setup(n, a, b)
				start := time.Now()
				var resp raft.AppendEntriesResponse
				err := a.AppendEntries("b", "b", &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte("a")}, Term: 1}, &resp)
				if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
					t.Fatalf("error %v, want %v", err, tc.want)
				}
				if took := time.Since(start); took != tc.took {
					t.Fatalf("took %v, want %v", took, tc.took)
				}
			})
		})
	}
}

// Goal: pipelining is declined so raft falls back to synchronous
// AppendEntries. Method: call AppendEntriesPipeline.
func TestTransportDeclinesPipeline(t *testing.T) {
	n := NewNetwork(Options{})
	defer n.Close()
	a, err := n.NewTransport("a")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.AppendEntriesPipeline("b", "b"); !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		t.Fatalf("error %v", err)
	}
}
