// Package maelstrom speaks the Maelstrom protocol (jepsen-io/maelstrom,
// doc/protocol.md): newline-separated JSON messages {src, dest, body} on
// stdin/stdout, request/response bodies with msg_id and in_reply_to, the
// init handshake and the error table. It also carries core/link requests
// in Maelstrom messages (link.go), so that Raft, through core/raftlink, runs
// on Maelstrom's network, with its latency and partitions.
package maelstrom

import (
	"encoding/json"
	"fmt"
)

// Message is one line on the wire. Body stays raw so that each handler
// decodes the fields of its own message type.
type Message struct {
	Src  string          `json:"src"`
	Dest string          `json:"dest"`
	Body json.RawMessage `json:"body"`
}

// Header holds the body keys the protocol reserves. InReplyTo is a pointer
// because msg_id 0 is a legal id: a reply is recognised by the key being
// present, not by its value.
type Header struct {
	Type      string `json:"type"`
	MsgID     *int   `json:"msg_id,omitempty"`
	InReplyTo *int   `json:"in_reply_to,omitempty"`
}

// ErrorBody is the body of an error reply. Code has no omitempty: code 0
// (timeout) must reach the wire.
type ErrorBody struct {
	Type string `json:"type"`
	Code int    `json:"code"`
	Text string `json:"text,omitempty"`
}

// Header decodes the reserved keys of m's body.
func (m Message) Header() (Header, error) {
	var h Header
	if err := json.Unmarshal(m.Body, &h); err != nil {
		return h, fmt.Errorf("decode body of message from %s: %w", m.Src, err)
	}
	return h, nil
}

// Type is the body's type, or "" when the body does not decode.
func (m Message) Type() string {
	h, err := m.Header()
	if err != nil {
		return ""
	}
	return h.Type
}

// Decode unmarshals the body into v.
func (m Message) Decode(v any) error {
	if err := json.Unmarshal(m.Body, v); err != nil {
		return NewError(MalformedRequest, fmt.Sprintf("decode %s body: %v", m.Type(), err))
	}
	return nil
}

// Err returns the *Error an error reply carries, or nil for any other
// message. A body of type "error" is an error whatever its code, 0 included.
func (m Message) Err() *Error {
	var b ErrorBody
	if err := json.Unmarshal(m.Body, &b); err != nil || b.Type != "error" {
		return nil
	}
	return &Error{Code: b.Code, Text: b.Text, Body: m.Body}
}

// withKeys returns body (any JSON object value) re-encoded with the given
// reserved keys set, so handlers can reply with plain structs or maps.
func withKeys(body any, msgID, inReplyTo *int) (json.RawMessage, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode body: %w", err)
	}
	if msgID == nil && inReplyTo == nil {
		return raw, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("body must be a JSON object: %w", err)
	}
	if msgID != nil {
		fields["msg_id"], _ = json.Marshal(*msgID)
	}
	if inReplyTo != nil {
		fields["in_reply_to"], _ = json.Marshal(*inReplyTo)
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("encode body: %w", err)
	}
	return out, nil
}
