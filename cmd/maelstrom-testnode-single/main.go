// Command maelstrom-testnode-single is a tiny lin-kv node, independent of
// lockstep (standard library only), used to show that maelstrom-run judges
// binaries it did not come with. It is correct: node n0 holds the only
// copy of every key, and every other node relays each request to n0 and
// n0's answer back. A relay that gets no answer (a partition) is never
// answered, so the client records it as indefinite.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

type message struct {
	Src  string          `json:"src"`
	Dest string          `json:"dest"`
	Body json.RawMessage `json:"body"`
}

type body struct {
	Type      string          `json:"type"`
	MsgID     int             `json:"msg_id"`
	InReplyTo *int            `json:"in_reply_to"`
	NodeID    string          `json:"node_id"`
	Key       json.RawMessage `json:"key"`
	Value     json.RawMessage `json:"value"`
	From      json.RawMessage `json:"from"`
	To        json.RawMessage `json:"to"`
	// Req and Reply carry a relayed client request and n0's answer.
	Req   json.RawMessage `json:"req"`
	Reply json.RawMessage `json:"reply"`
}

// relay is a client request waiting for n0's answer.
type relay struct {
	client string
	msgID  int
}

// maxRelays bounds the relays awaiting answers; lost ones are forgotten.
const maxRelays = 10000

type node struct {
	mu     sync.Mutex
	out    *bufio.Writer
	id     string
	next   int
	data   map[string]json.RawMessage
	relays map[int]relay
}

func (n *node) send(dest string, b map[string]any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sendLocked(dest, b)
}

// sendLocked sends b with the next msg_id and returns that id.
func (n *node) sendLocked(dest string, b map[string]any) int {
	n.next++
	b["msg_id"] = n.next
	raw, _ := json.Marshal(b)
	line, _ := json.Marshal(message{Src: n.id, Dest: dest, Body: raw})
	n.out.Write(append(line, '\n'))
	n.out.Flush()
	return n.next
}

// apply runs one kv request on n0's copy and returns the reply body.
func (n *node) apply(b body) map[string]any {
	n.mu.Lock()
	defer n.mu.Unlock()
	key := string(b.Key)
	cur, ok := n.data[key]
	switch b.Type {
	case "read":
		if !ok {
			return map[string]any{"type": "error", "code": 20, "text": "no such key"}
		}
		return map[string]any{"type": "read_ok", "value": cur}
	case "write":
		n.data[key] = b.Value
		return map[string]any{"type": "write_ok"}
	case "cas":
		if !ok {
			return map[string]any{"type": "error", "code": 20, "text": "no such key"}
		}
		if string(cur) != string(b.From) {
			return map[string]any{"type": "error", "code": 22, "text": "from mismatch"}
		}
		n.data[key] = b.To
		return map[string]any{"type": "cas_ok"}
	}
	return map[string]any{"type": "error", "code": 10, "text": "not supported"}
}

func (n *node) handle(m message) {
	var b body
	if err := json.Unmarshal(m.Body, &b); err != nil {
		fmt.Fprintln(os.Stderr, "bad body:", err)
		return
	}
	reply := func(r map[string]any) {
		r["in_reply_to"] = b.MsgID
		n.send(m.Src, r)
	}
	switch {
	case b.Type == "init":
		n.mu.Lock()
		n.id = b.NodeID
		n.mu.Unlock()
		reply(map[string]any{"type": "init_ok"})
	case b.Type == "relay":
		var req body
		_ = json.Unmarshal(b.Req, &req)
		reply(map[string]any{"type": "relay_ok", "reply": n.apply(req)})
	case b.Type == "relay_ok" && b.InReplyTo != nil:
		n.mu.Lock()
		r, ok := n.relays[*b.InReplyTo]
		delete(n.relays, *b.InReplyTo)
		n.mu.Unlock()
		if ok {
			var out map[string]any
			_ = json.Unmarshal(b.Reply, &out)
			out["in_reply_to"] = r.msgID
			n.send(r.client, out)
		}
	case n.id == "n0":
		reply(n.apply(b))
	default:
		n.mu.Lock()
		if len(n.relays) >= maxRelays {
			clear(n.relays)
		}
		id := n.sendLocked("n0", map[string]any{"type": "relay", "req": m.Body})
		n.relays[id] = relay{client: m.Src, msgID: b.MsgID}
		n.mu.Unlock()
	}
}

func main() {
	n := &node{out: bufio.NewWriter(os.Stdout), data: map[string]json.RawMessage{}, relays: map[int]relay{}}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "bad line:", err)
			continue
		}
		n.handle(m)
	}
}
