// Command maelstrom-testnode-stale is a tiny lin-kv node, independent of
// lockstep (standard library only), that is deliberately not linearizable:
// it exists to show that maelstrom-run flags a broken binary. Writes and
// compare-and-sets go to n0, as in maelstrom-testnode-single, but every
// node answers reads from its own copy, which n0 updates only after
// updateDelay: a read soon after an acknowledged write can see the old
// value.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// updateDelay is how long n0 waits before pushing a new value to the other
// nodes' copies.
const updateDelay = 500 * time.Millisecond

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
	NodeIDs   []string        `json:"node_ids"`
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
	peers  []string
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
		n.pushLater(b.Key, b.Value)
		return map[string]any{"type": "write_ok"}
	case "cas":
		if !ok {
			return map[string]any{"type": "error", "code": 20, "text": "no such key"}
		}
		if string(cur) != string(b.From) {
			return map[string]any{"type": "error", "code": 22, "text": "from mismatch"}
		}
		n.data[key] = b.To
		n.pushLater(b.Key, b.To)
		return map[string]any{"type": "cas_ok"}
	}
	return map[string]any{"type": "error", "code": 10, "text": "not supported"}
}

// pushLater sends key's new value to every other node after updateDelay;
// callers hold mu. Timers are bounded by the write rate times the delay.
func (n *node) pushLater(key, value json.RawMessage) {
	peers, self := n.peers, n.id
	time.AfterFunc(updateDelay, func() {
		for _, p := range peers {
			if p != self {
				n.send(p, map[string]any{"type": "update", "key": key, "value": value})
			}
		}
	})
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
		n.id, n.peers = b.NodeID, b.NodeIDs
		n.mu.Unlock()
		reply(map[string]any{"type": "init_ok"})
	case b.Type == "relay":
		var req body
		_ = json.Unmarshal(b.Req, &req)
		reply(map[string]any{"type": "relay_ok", "reply": n.apply(req)})
	case b.Type == "update":
		n.mu.Lock()
		n.data[string(b.Key)] = b.Value
		n.mu.Unlock()
	case b.Type == "read" && n.id != "n0":
		n.mu.Lock()
		cur, ok := n.data[string(b.Key)]
		n.mu.Unlock()
		if !ok {
			reply(map[string]any{"type": "error", "code": 20, "text": "no such key"})
		} else {
			reply(map[string]any{"type": "read_ok", "value": cur})
		}
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
