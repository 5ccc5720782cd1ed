package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockstep/lockstep/maelstrom"
	"github.com/lockstep/lockstep/models"
)

// kvGenerator is Maelstrom's lin-kv mix: reads, writes and compare-and-sets
// in equal parts over a few integer keys and small integer values (small so
// that cas often matches and stale values are likely to be noticed).
type kvGenerator struct {
	keys   int
	values int
}

var _ generator = kvGenerator{}

func (g kvGenerator) next(r *rand.Rand, _ *clientState, _ time.Time) request {
	key := r.Intn(g.keys)
	switch r.Intn(3) {
	case 0:
		return request{f: "read", body: map[string]any{"type": "read", "key": key}}
	case 1:
		return request{f: "write", body: map[string]any{"type": "write", "key": key, "value": r.Intn(g.values)}}
	default:
		return request{f: "cas", body: map[string]any{"type": "cas", "key": key, "from": r.Intn(g.values), "to": r.Intn(g.values)}}
	}
}

func (kvGenerator) observe(*clientState, Op, time.Time) {}

type kvBody struct {
	Key   json.RawMessage `json:"key"`
	Value json.RawMessage `json:"value"`
	From  json.RawMessage `json:"from"`
	To    json.RawMessage `json:"to"`
}

// compactJSON is the canonical text of a JSON value ("" for none).
func compactJSON(v json.RawMessage) string {
	if len(v) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return string(v)
	}
	return b.String()
}

// kvOperations converts a lin-kv history for models.KV. A definite error
// other than 20 and 22 (e.g. 11) keeps its code and means "no effect".
func kvOperations(h *History) ([]porcupine.Operation, error) {
	ops := make([]porcupine.Operation, 0, len(h.Ops))
	for _, op := range h.Ops {
		var req kvBody
		if err := json.Unmarshal(op.Request, &req); err != nil {
			return nil, fmt.Errorf("op %d: request: %w", op.Index, err)
		}
		in := models.KVInput{Op: models.KVOp(op.F), Key: compactJSON(req.Key)}
		switch in.Op {
		case models.KVWrite:
			in.Value = compactJSON(req.Value)
		case models.KVCAS:
			in.From, in.To = compactJSON(req.From), compactJSON(req.To)
		case models.KVRead:
		default:
			return nil, fmt.Errorf("op %d: unknown f %q", op.Index, op.F)
		}
		var out models.KVOutput
		ret := op.Complete
		switch op.Type {
		case TypeOK:
			if in.Op == models.KVRead {
				var rep kvBody
				if err := json.Unmarshal(op.Reply, &rep); err != nil {
					return nil, fmt.Errorf("op %d: reply: %w", op.Index, err)
				}
				out.Value = compactJSON(rep.Value)
			}
		case TypeFail:
			out.Code = kvCode(*op.Code)
		default:
			out.Unknown, ret = true, math.MaxInt64
		}
		ops = append(ops, porcupine.Operation{
			ClientId: op.Process, Input: in, Output: out, Call: op.Invoke, Return: ret,
			Metadata: fmt.Sprintf("op %d on %s by %s", op.Index, op.Node, op.Client),
		})
	}
	return ops, nil
}

func kvCode(code int) string {
	switch code {
	case maelstrom.KeyDoesNotExist:
		return models.CodeKeyNotFound
	case maelstrom.PreconditionFailed:
		return models.CodePreconditionFailed
	}
	return maelstrom.CodeName(code)
}
