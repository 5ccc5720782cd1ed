// Package linkv is a tiny Maelstrom lin-kv node on the standard library
// alone, shared by the test nodes that show maelstrom-run judging binaries
// it did not come with (cmd/maelstrom-testnode-*): they use none of
// lockstep's service. Node n0 holds the authoritative copy of every key,
// and every other node relays each request to n0 and n0's answer back. A
// relay that gets no answer (a partition) is never answered, so the client
// records it as indefinite.
package linkv

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
)

// Message is one Maelstrom message.
type Message struct {
	Src  string          `json:"src"`
	Dest string          `json:"dest"`
	Body json.RawMessage `json:"body"`
}

// Body is what the nodes read of a message body.
type Body struct {
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

// Node is one lin-kv node. Set the hooks before Run.
type Node struct {
	// Changed, when set, is called after Apply sets key to value (a write
	// or cas), with this node's id and every node's id from init. It runs
	// with the node's lock held, so it must not call the node.
	Changed func(self string, nodes []string, key, value json.RawMessage)
	// Intercept, when set, sees every message body first and reports
	// whether it handled it; reply answers the message's sender.
	Intercept func(b Body, reply func(map[string]any)) bool

	mu     sync.Mutex
	out    *bufio.Writer
	id     string
	nodes  []string
	next   int
	data   map[string]json.RawMessage
	relays map[int]relay
}

// New returns a node that writes its messages to out.
func New(out io.Writer) *Node {
	return &Node{out: bufio.NewWriter(out), data: map[string]json.RawMessage{}, relays: map[int]relay{}}
}

// Run handles the messages read from in, one a line, until it ends.
func (n *Node) Run(in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var m Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "bad line:", err)
			continue
		}
		n.handle(m)
	}
}

// ID is this node's id, known once init arrived.
func (n *Node) ID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.id
}

// Send sends b to dest with the next msg_id.
func (n *Node) Send(dest string, b map[string]any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sendLocked(dest, b)
}

// sendLocked sends b with the next msg_id and returns that id.
func (n *Node) sendLocked(dest string, b map[string]any) int {
	n.next++
	b["msg_id"] = n.next
	raw, _ := json.Marshal(b)
	line, _ := json.Marshal(Message{Src: n.id, Dest: dest, Body: raw})
	n.out.Write(append(line, '\n'))
	n.out.Flush()
	return n.next
}

// Store sets this node's copy of key to value.
func (n *Node) Store(key, value json.RawMessage) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.data[string(key)] = value
}

// Apply runs one kv request on this node's copy and returns the reply body.
func (n *Node) Apply(b Body) map[string]any {
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
		n.setLocked(b.Key, b.Value)
		return map[string]any{"type": "write_ok"}
	case "cas":
		if !ok {
			return map[string]any{"type": "error", "code": 20, "text": "no such key"}
		}
		if string(cur) != string(b.From) {
			return map[string]any{"type": "error", "code": 22, "text": "from mismatch"}
		}
		n.setLocked(b.Key, b.To)
		return map[string]any{"type": "cas_ok"}
	}
	return map[string]any{"type": "error", "code": 10, "text": "not supported"}
}

func (n *Node) setLocked(key, value json.RawMessage) {
	n.data[string(key)] = value
	if n.Changed != nil {
		n.Changed(n.id, n.nodes, key, value)
	}
}

func (n *Node) handle(m Message) {
	var b Body
	if err := json.Unmarshal(m.Body, &b); err != nil {
		fmt.Fprintln(os.Stderr, "bad body:", err)
		return
	}
	reply := func(r map[string]any) {
		r["in_reply_to"] = b.MsgID
		n.Send(m.Src, r)
	}
	if n.Intercept != nil && n.Intercept(b, reply) {
		return
	}
	switch {
	case b.Type == "init":
		n.mu.Lock()
		n.id, n.nodes = b.NodeID, b.NodeIDs
		n.mu.Unlock()
		reply(map[string]any{"type": "init_ok"})
	case b.Type == "relay":
		var req Body
		_ = json.Unmarshal(b.Req, &req)
		reply(map[string]any{"type": "relay_ok", "reply": n.Apply(req)})
	case b.Type == "relay_ok" && b.InReplyTo != nil:
		n.mu.Lock()
		r, ok := n.relays[*b.InReplyTo]
		delete(n.relays, *b.InReplyTo)
		n.mu.Unlock()
		if ok {
			var out map[string]any
			_ = json.Unmarshal(b.Reply, &out)
			out["in_reply_to"] = r.msgID
			n.Send(r.client, out)
		}
	case n.id == "n0":
		reply(n.Apply(b))
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
