package models

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// KVOp names a lin-kv operation.
type KVOp string

// The operations of Maelstrom's lin-kv workload.
const (
	KVRead  KVOp = "read"
	KVWrite KVOp = "write"
	KVCAS   KVOp = "cas"
)

// Definite lin-kv error codes the register model interprets. Every other
// non-empty code means the operation had no effect.
const (
	CodeKeyNotFound        = "not_found"
	CodePreconditionFailed = "precondition_failed"
)

// KVInput is the call half of one lin-kv operation. Values are strings
// (canonical JSON text of Maelstrom's values) so any value type compares.
type KVInput struct {
	Op    KVOp   `json:"op"`
	Key   string `json:"key"`
	Value string `json:"value,omitempty"` // write
	From  string `json:"from,omitempty"`  // cas
	To    string `json:"to,omitempty"`    // cas
}

// KVOutput is the return half of one lin-kv operation.
type KVOutput struct {
	// Unknown marks an indefinite outcome (timeout, crash).
	Unknown bool `json:"unknown,omitempty"`
	// Code is "" on success, CodeKeyNotFound, CodePreconditionFailed, or
	// another definite error.
	Code  string `json:"code,omitempty"`
	Value string `json:"value,omitempty"` // read
}

// kvState is one key's register; comparable, so == is its equality.
type kvState struct {
	Present bool
	Value   string
}

// KV is a linearizable register per key, partitioned by key. It is
// deterministic: an indefinite write or cas is applied at its linearization
// point, and "it never happened" is covered because Porcupine may linearize
// an operation with Return = MaxInt64 after every other one, where its
// effect is invisible.
var KV = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() interface{} { return kvState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		return stepKV(state.(kvState), input.(KVInput), output.(KVOutput))
	},
	DescribeOperation: func(input, output interface{}) string {
		return describeKV(input.(KVInput), output.(KVOutput))
	},
	DescribeState: func(state interface{}) string {
		s := state.(kvState)
		if !s.Present {
			return "<missing>"
		}
		return s.Value
	},
}

func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	return partitionBy(history, func(op porcupine.Operation) string { return op.Input.(KVInput).Key })
}

func stepKV(s kvState, in KVInput, out KVOutput) (bool, kvState) {
	matches := s.Present && s.Value == in.From
	if out.Unknown {
		switch in.Op {
		case KVWrite:
			return true, kvState{Present: true, Value: in.Value}
		case KVCAS:
			if matches {
				return true, kvState{Present: true, Value: in.To}
			}
		}
		return true, s
	}
	switch in.Op {
	case KVRead:
		switch out.Code {
		case "":
			return s.Present && s.Value == out.Value, s
		case CodeKeyNotFound:
			return !s.Present, s
		}
	case KVWrite:
		if out.Code == "" {
			return true, kvState{Present: true, Value: in.Value}
		}
	case KVCAS:
		switch out.Code {
		case "":
			return matches, kvState{Present: true, Value: in.To}
		case CodePreconditionFailed:
			return s.Present && s.Value != in.From, s
		case CodeKeyNotFound:
			return !s.Present, s
		}
	default:
		return false, s
	}
	return true, s
}

func describeKV(in KVInput, out KVOutput) string {
	var call string
	switch in.Op {
	case KVRead:
		call = fmt.Sprintf("read(%s)", in.Key)
	case KVWrite:
		call = fmt.Sprintf("write(%s, %s)", in.Key, in.Value)
	case KVCAS:
		call = fmt.Sprintf("cas(%s, %s→%s)", in.Key, in.From, in.To)
	default:
		call = fmt.Sprintf("%s(%s)", in.Op, in.Key)
	}
	switch {
	case out.Unknown:
		return call + " -> unknown"
	case out.Code != "":
		return call + " -> " + out.Code
	case in.Op == KVRead:
		return call + " -> " + out.Value
	}
	return call + " -> ok"
}
