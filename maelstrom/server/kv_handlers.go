package server

import (
	"context"
	"encoding/json"

	"github.com/lockstep/lockstep/maelstrom"
)

// The lin-kv workload (doc/workloads.md): read, write and cas on any JSON
// key; errors 20 (key does not exist) and 22 (cas from mismatch), both
// decided in the log. cas also takes create_if_not_exists, as Maelstrom's
// lin-kv service does.
type kvRequest struct {
	Key    json.RawMessage `json:"key"`
	Value  json.RawMessage `json:"value"`
	From   json.RawMessage `json:"from"`
	To     json.RawMessage `json:"to"`
	Create bool            `json:"create_if_not_exists"`
}

type readOK struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

type typeOnly struct {
	Type string `json:"type"`
}

func (s *Server) handleRead(ctx context.Context, msg maelstrom.Message) (any, error) {
	var req kvRequest
	if err := msg.Decode(&req); err != nil {
		return nil, err
	}
	if req.Key == nil {
		return nil, maelstrom.NewError(maelstrom.MalformedRequest, "read needs a key")
	}
	res, err := s.kv(ctx, kvCommand{Op: kvRead, Key: req.Key})
	if err != nil {
		return nil, err
	}
	return readOK{Type: "read_ok", Value: res.Value}, nil
}

func (s *Server) handleWrite(ctx context.Context, msg maelstrom.Message) (any, error) {
	var req kvRequest
	if err := msg.Decode(&req); err != nil {
		return nil, err
	}
	if req.Key == nil || req.Value == nil {
		return nil, maelstrom.NewError(maelstrom.MalformedRequest, "write needs a key and a value")
	}
	if _, err := s.kv(ctx, kvCommand{Op: kvWrite, Key: req.Key, Value: req.Value}); err != nil {
		return nil, err
	}
	return typeOnly{Type: "write_ok"}, nil
}

func (s *Server) handleCAS(ctx context.Context, msg maelstrom.Message) (any, error) {
	var req kvRequest
	if err := msg.Decode(&req); err != nil {
		return nil, err
	}
	if req.Key == nil || req.From == nil || req.To == nil {
		return nil, maelstrom.NewError(maelstrom.MalformedRequest, "cas needs a key, from and to")
	}
	if _, err := s.kv(ctx, kvCommand{Op: kvCAS, Key: req.Key, From: req.From, To: req.To, Create: req.Create}); err != nil {
		return nil, err
	}
	return typeOnly{Type: "cas_ok"}, nil
}

// kv runs cmd on the register group within the request timeout and turns
// both failures and the log's definite refusals into Maelstrom errors.
func (s *Server) kv(ctx context.Context, cmd kvCommand) (kvResult, error) {
	g, err := s.group(groupKV)
	if err != nil {
		return kvResult{}, ErrorFor(err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	res, err := g.(*kvReplica).do(ctx, cmd)
	if err != nil {
		return kvResult{}, ErrorFor(err)
	}
	if res.Code != 0 {
		return res, maelstrom.NewError(res.Code, res.Text)
	}
	return res, nil
}
