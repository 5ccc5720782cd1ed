package runner

import (
	"encoding/json"
	"fmt"
	"os"
)

// Op types, as in Maelstrom's (Jepsen's) histories.
const (
	// TypeOK: the node acknowledged the operation.
	TypeOK = "ok"
	// TypeFail: a definite error; the operation certainly had no effect.
	TypeFail = "fail"
	// TypeInfo: an indefinite error or no reply in time; the operation may
	// or may not have taken effect, now or later.
	TypeInfo = "info"
)

// Op is one client operation, from invocation to completion.
type Op struct {
	Index int `json:"index"`
	// Process is the Porcupine lane: a client whose operation ended in
	// info continues as a new process, because that operation never
	// returns (it stays concurrent with everything after it).
	Process int    `json:"process"`
	Client  string `json:"client"`
	Node    string `json:"node"`
	F       string `json:"f"`
	// Request is the body sent, Reply the body received (none for a timeout).
	Request  json.RawMessage `json:"request"`
	Type     string          `json:"type"`
	Invoke   int64           `json:"invoke_ns"`
	Complete int64           `json:"complete_ns"`
	Reply    json.RawMessage `json:"reply,omitempty"`
	// Code is the error code of a fail or of an info that had a reply.
	Code *int `json:"code,omitempty"`
}

// History is everything a run recorded; a verdict can be recomputed from
// it alone (maelstrom-run -check DIR).
type History struct {
	Workload string   `json:"workload"`
	Seed     int64    `json:"seed"`
	Nodes    []string `json:"nodes"`
	Ops      []Op     `json:"ops"`
	Faults   []Fault  `json:"faults"`
	Network  NetStats `json:"network"`
}

// Counts tallies a history's op types.
type Counts struct {
	OK   int `json:"ok"`
	Fail int `json:"fail"`
	Info int `json:"info"`
}

func (h *History) counts() Counts {
	var c Counts
	for _, op := range h.Ops {
		switch op.Type {
		case TypeOK:
			c.OK++
		case TypeFail:
			c.Fail++
		default:
			c.Info++
		}
	}
	return c
}

// LoadHistory reads a history.json written by a run.
func LoadHistory(path string) (*History, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load history: %w", err)
	}
	var h History
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("load history %s: %w", path, err)
	}
	return &h, nil
}
