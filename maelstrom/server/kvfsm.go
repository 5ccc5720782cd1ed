package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"
	"github.com/lockstep/lockstep/maelstrom"
)

// Register operations of the lin-kv workload.
const (
	kvRead  = "read"
	kvWrite = "write"
	kvCAS   = "cas"
)

// kvCommand is one lin-kv operation as a log entry. Keys and values are any
// JSON; they are compared as compact JSON text.
type kvCommand struct {
	Op     string          `json:"op"`
	Key    json.RawMessage `json:"key"`
	Value  json.RawMessage `json:"value,omitempty"`
	From   json.RawMessage `json:"from,omitempty"`
	To     json.RawMessage `json:"to,omitempty"`
	Create bool            `json:"create,omitempty"`
}

// kvResult is what applying a kvCommand answered. Code is 0 on success or
// the definite Maelstrom error the operation met (key missing, cas
// mismatch): these are decided in the log, so they are linearizable too.
type kvResult struct {
	Value json.RawMessage `json:"value,omitempty"`
	Code  int             `json:"code,omitempty"`
	Text  string          `json:"text,omitempty"`
}

// kvFSM is a map of registers, applied by hashicorp/raft.
type kvFSM struct {
	mu   sync.Mutex
	data map[string]json.RawMessage // compact key JSON -> value JSON
}

var _ raft.FSM = (*kvFSM)(nil)

func newKVFSM() *kvFSM { return &kvFSM{data: make(map[string]json.RawMessage)} }

// canonical is the compact form of a JSON value, the identity used for
// keys and for cas comparisons.
func canonical(v json.RawMessage) (string, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

func (f *kvFSM) Apply(l *raft.Log) interface{} {
	var cmd kvCommand
	if err := json.Unmarshal(l.Data, &cmd); err != nil {
		// Every replica skips it alike; the proposer learns why.
		return kvResult{Code: maelstrom.MalformedRequest, Text: err.Error()}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.apply(cmd)
}

func (f *kvFSM) apply(cmd kvCommand) kvResult {
	key, err := canonical(cmd.Key)
	if err != nil {
		return kvResult{Code: maelstrom.MalformedRequest, Text: "key: " + err.Error()}
	}
	cur, present := f.data[key]
	switch cmd.Op {
	case kvRead:
		if !present {
			return kvResult{Code: maelstrom.KeyDoesNotExist, Text: "key does not exist"}
		}
		return kvResult{Value: cur}
	case kvWrite:
		v, err := canonical(cmd.Value)
		if err != nil {
			return kvResult{Code: maelstrom.MalformedRequest, Text: "value: " + err.Error()}
		}
		f.data[key] = json.RawMessage(v)
		return kvResult{}
	case kvCAS:
		from, err1 := canonical(cmd.From)
		to, err2 := canonical(cmd.To)
		if err1 != nil || err2 != nil {
			return kvResult{Code: maelstrom.MalformedRequest, Text: "cas needs from and to"}
		}
		switch {
		case !present && cmd.Create:
			f.data[key] = json.RawMessage(to)
			return kvResult{}
		case !present:
			return kvResult{Code: maelstrom.KeyDoesNotExist, Text: "key does not exist"}
		case string(cur) != from:
			return kvResult{Code: maelstrom.PreconditionFailed, Text: fmt.Sprintf("expected %s, found %s", from, cur)}
		}
		f.data[key] = json.RawMessage(to)
		return kvResult{}
	}
	return kvResult{Code: maelstrom.MalformedRequest, Text: fmt.Sprintf("unknown op %q", cmd.Op)}
}

func (f *kvFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := json.Marshal(f.data)
	if err != nil {
		return nil, fmt.Errorf("encode kv snapshot: %w", err)
	}
	return kvSnapshot(b), nil
}

func (f *kvFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	data := make(map[string]json.RawMessage)
	if err := json.NewDecoder(rc).Decode(&data); err != nil {
		return fmt.Errorf("decode kv snapshot: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data = data
	return nil
}

// kvSnapshot is an encoded map, encoded under the FSM lock and written
// later without it.
type kvSnapshot []byte

func (s kvSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("write kv snapshot: %w", err)
	}
	return sink.Close()
}

func (s kvSnapshot) Release() {}
