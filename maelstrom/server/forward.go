package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/maelstrom"
)

// Forward message types: a follower sends the encoded command of a Raft
// group to the leader, which proposes it and replies with the encoded
// result (or an error reply classified by ErrorFor).
const (
	forwardType   = "forward"
	forwardOKType = "forward_ok"
)

type forwardBody struct {
	Type  string `json:"type"`
	Group string `json:"group"`
	Cmd   []byte `json:"cmd"`
}

type forwardOK struct {
	Type   string `json:"type"`
	Result []byte `json:"result"`
}

// Forwarder is a node.Forwarder over Maelstrom messages. Both Raft groups
// use it, the lock node through node.Config and the register replica
// directly, so both read a forward's failure the same way.
type Forwarder struct {
	caller maelstrom.Caller
	group  string
}

var _ node.Forwarder = (*Forwarder)(nil)

// NewForwarder returns a forwarder for group's commands.
func NewForwarder(c maelstrom.Caller, group string) *Forwarder {
	return &Forwarder{caller: c, group: group}
}

// Forward implements node.Forwarder. A message that was never written is
// ErrUnavailable; once written, silence until ctx ends is an unknown
// outcome (Maelstrom may have delivered the request and lost the reply).
func (f *Forwarder) Forward(ctx context.Context, leader node.Peer, cmd []byte) ([]byte, error) {
	msg, err := f.caller.RPC(ctx, leader.ID, forwardBody{Type: forwardType, Group: f.group, Cmd: cmd})
	if err != nil {
		var e *maelstrom.Error
		switch {
		case errors.As(err, &e):
			return nil, forwardError(leader.ID, e)
		case errors.Is(err, maelstrom.ErrNotSent):
			return nil, fmt.Errorf("%w: %w", node.ErrUnavailable, err)
		default:
			return nil, fmt.Errorf("sent, no reply: %w", err)
		}
	}
	var ok forwardOK
	if err := json.Unmarshal(msg.Body, &ok); err != nil || ok.Type != forwardOKType {
		return nil, fmt.Errorf("forward to %s: unexpected reply %s", leader.ID, msg.Body)
	}
	return ok.Result, nil
}
