package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/lockstep/lockstep/maelstrom"
)

// cluster runs Servers in this process, each behind its own maelstrom.Node
// over pipes, with a router between them; the test is client c1.
type cluster struct {
	t       *testing.T
	mu      sync.Mutex
	inputs  map[string]*io.PipeWriter
	servers map[string]*Server
	next    int
	waits   map[int]chan map[string]any
	// intercept, when set, decides the fate of each message between nodes.
	intercept func(src, dest string, body map[string]any) fate
}

// fate is what the router does with one message between nodes; the zero
// fate delivers it.
type fate struct {
	drop bool
	// refuse answers the message with this error code on its
	// destination's behalf instead of delivering it (0: no).
	refuse int
	// to delivers the message to this node instead of its destination.
	to string
}

// testTiming elects quickly over pipes.
var testTiming = Timing{Heartbeat: 100 * time.Millisecond, Election: 100 * time.Millisecond, LeaderLease: 50 * time.Millisecond, RPCTimeout: 300 * time.Millisecond}

func newCluster(t *testing.T, n int) *cluster { return newClusterTiming(t, n, testTiming) }

func newClusterTiming(t *testing.T, n int, timing Timing) *cluster {
	t.Helper()
	c := &cluster{t: t, inputs: map[string]*io.PipeWriter{}, servers: map[string]*Server{}, waits: map[int]chan map[string]any{}}
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("n%d", i))
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		c.inputs[id] = inW
		mn := maelstrom.NewNode(maelstrom.Options{})
		srv := New(mn, Options{Timing: timing})
		c.servers[id] = srv
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = mn.Run(context.Background(), inR, outW)
			_ = srv.Close()
			outW.Close()
		}()
		go c.route(outR)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		for _, w := range c.inputs {
			w.Close()
		}
		c.mu.Unlock()
		wg.Wait()
	})
	for _, id := range ids {
		if b := c.call(id, map[string]any{"type": "init", "node_id": id, "node_ids": ids}); b["type"] != "init_ok" {
			t.Fatalf("init %s: %v", id, b)
		}
	}
	return c
}

// route carries a node's output to other nodes or to the test client.
func (c *cluster) route(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m maelstrom.Message
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		var body map[string]any
		_ = json.Unmarshal(m.Body, &body)
		c.mu.Lock()
		w, intercept := c.inputs[m.Dest], c.intercept
		c.mu.Unlock()
		if w != nil {
			line := sc.Bytes()
			if intercept != nil {
				f := intercept(m.Src, m.Dest, body)
				switch {
				case f.drop:
					continue
				case f.refuse != 0:
					c.refuse(m, body, f.refuse)
					continue
				case f.to != "":
					c.mu.Lock()
					w = c.inputs[f.to]
					c.mu.Unlock()
					m.Dest = f.to
					line, _ = json.Marshal(m)
				}
			}
			_, _ = w.Write(append(line, '\n'))
			continue
		}
		if id, ok := body["in_reply_to"].(float64); ok {
			c.mu.Lock()
			ch := c.waits[int(id)]
			c.mu.Unlock()
			if ch != nil {
				ch <- body
			}
		}
	}
}

// refuse answers m with an error of code, as its destination would.
func (c *cluster) refuse(m maelstrom.Message, body map[string]any, code int) {
	reply, _ := json.Marshal(map[string]any{"type": "error", "code": code, "text": "refused by the test's router", "in_reply_to": body["msg_id"]})
	line, _ := json.Marshal(maelstrom.Message{Src: m.Dest, Dest: m.Src, Body: reply})
	c.mu.Lock()
	w := c.inputs[m.Src]
	c.mu.Unlock()
	_, _ = w.Write(append(line, '\n'))
}

// setIntercept sets the router's intercept (nil: deliver everything).
func (c *cluster) setIntercept(f func(src, dest string, body map[string]any) fate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.intercept = f
}

// call sends body from c1 to node and returns the reply body.
func (c *cluster) call(node string, body map[string]any) map[string]any {
	c.t.Helper()
	ch := make(chan map[string]any, 1)
	c.mu.Lock()
	c.next++
	id := c.next
	c.waits[id] = ch
	w := c.inputs[node]
	c.mu.Unlock()
	body["msg_id"] = id
	raw, _ := json.Marshal(body)
	line, _ := json.Marshal(maelstrom.Message{Src: "c1", Dest: node, Body: raw})
	if _, err := w.Write(append(line, '\n')); err != nil {
		c.t.Fatal(err)
	}
	select {
	case b := <-ch:
		return b
	case <-time.After(10 * time.Second):
		c.t.Fatalf("no reply from %s to %v", node, body)
	}
	return nil
}

// callOK retries while the group has no leader yet (code 11: definitely
// not applied, so retrying is safe) and returns the first other reply.
func (c *cluster) callOK(node string, body map[string]any) map[string]any {
	c.t.Helper()
	for range 50 {
		b := c.call(node, body)
		if b["code"] != float64(maelstrom.TemporarilyUnavailable) {
			return b
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("%s stayed unavailable for %v", node, body)
	return nil
}

func wantType(t *testing.T, what string, b map[string]any, typ string) {
	t.Helper()
	if b["type"] != typ {
		t.Fatalf("%s: got %v, want %s", what, b, typ)
	}
}

func wantCode(t *testing.T, what string, b map[string]any, code int) {
	t.Helper()
	if b["type"] != "error" || b["code"] != float64(code) {
		t.Fatalf("%s: got %v, want error %d", what, b, code)
	}
}

// TestLinKV runs the lin-kv workload's messages against a 3-node cluster.
// Goal: every node answers every request (followers forward to the Raft
// leader) with the replies and error codes of doc/workloads.md. Method:
// one request per row, each at a different node than the last.
func TestLinKV(t *testing.T) {
	c := newCluster(t, 3)
	wantType(t, "write", c.callOK("n0", map[string]any{"type": "write", "key": 1, "value": 10}), "write_ok")
	b := c.callOK("n1", map[string]any{"type": "read", "key": 1})
	if wantType(t, "read", b, "read_ok"); b["value"] != float64(10) {
		t.Fatalf("read after write: %v", b)
	}
	wantCode(t, "read of a missing key", c.callOK("n2", map[string]any{"type": "read", "key": 2}), maelstrom.KeyDoesNotExist)
	wantCode(t, "cas from a wrong value", c.callOK("n0", map[string]any{"type": "cas", "key": 1, "from": 3, "to": 4}), maelstrom.PreconditionFailed)
	wantCode(t, "cas of a missing key", c.callOK("n1", map[string]any{"type": "cas", "key": 2, "from": 3, "to": 4}), maelstrom.KeyDoesNotExist)
	wantType(t, "cas", c.callOK("n2", map[string]any{"type": "cas", "key": 1, "from": 10, "to": 11}), "cas_ok")
	wantType(t, "cas create", c.callOK("n0", map[string]any{"type": "cas", "key": "k", "from": 0, "to": [2]int{1, 2}, "create_if_not_exists": true}), "cas_ok")
	if b := c.callOK("n1", map[string]any{"type": "read", "key": "k"}); fmt.Sprint(b["value"]) != "[1 2]" {
		t.Fatalf("read of a created key: %v", b)
	}
	wantCode(t, "write without value", c.call("n1", map[string]any{"type": "write", "key": 1}), maelstrom.MalformedRequest)
	wantCode(t, "unknown type", c.call("n2", map[string]any{"type": "txn"}), maelstrom.NotSupported)
}

// TestLockWorkload runs the lock workload's messages against a 3-node
// cluster on the real lock node. Goal: grants, refusals, releases, renews
// and status as README's table says, with lease ids, fencing tokens and
// log times; releasing or renewing a dead lease is 22 and carries the log
// time it was decided at. Method: one request per row, spread over nodes.
func TestLockWorkload(t *testing.T) {
	c := newCluster(t, 3)
	a := c.callOK("n1", map[string]any{"type": "acquire", "resource": "r", "client": "a", "ttl": 5000})
	if wantType(t, "acquire", a, "acquire_ok"); a["granted"] != true || a["lease_id"] == nil || a["fencing_token"] == nil || a["log_time_ns"] == nil {
		t.Fatalf("acquire: %v", a)
	}
	lease, token := a["lease_id"], a["fencing_token"].(float64)
	if b := c.callOK("n2", map[string]any{"type": "acquire", "resource": "r", "ttl": 5000}); b["granted"] != false {
		t.Fatalf("second exclusive acquire: %v", b)
	}
	st := c.callOK("n0", map[string]any{"type": "status", "resource": "r"})
	if hs, _ := st["holders"].([]any); len(hs) != 1 || hs[0].(map[string]any)["lease_id"] != lease {
		t.Fatalf("status: %v", st)
	}
	r := c.callOK("n2", map[string]any{"type": "renew", "resource": "r", "lease_id": lease, "ttl": 8000})
	if wantType(t, "renew", r, "renew_ok"); r["fencing_token"] != token || r["expires_in"].(float64) < 7000 {
		t.Fatalf("renew: %v", r)
	}
	wantType(t, "release", c.callOK("n0", map[string]any{"type": "release", "resource": "r", "lease_id": lease}), "release_ok")
	for _, typ := range []string{"release", "renew"} {
		b := c.callOK("n1", map[string]any{"type": typ, "resource": "r", "lease_id": lease})
		if wantCode(t, typ+" of a released lease", b, maelstrom.PreconditionFailed); b["log_time_ns"] == nil {
			t.Fatalf("%s of a released lease carries no log_time_ns: %v", typ, b)
		}
	}
	b := c.callOK("n2", map[string]any{"type": "acquire", "resource": "r", "ttl": 1000, "wait": 100, "mode": "shared"})
	if b["granted"] != true || b["fencing_token"].(float64) <= token || b["mode"] != "shared" {
		t.Fatalf("acquire after release: %v (first token %v)", b, token)
	}
	wantCode(t, "acquire without ttl", c.call("n0", map[string]any{"type": "acquire", "resource": "r"}), maelstrom.MalformedRequest)
	wantCode(t, "bad mode", c.call("n0", map[string]any{"type": "acquire", "resource": "r", "ttl": 10, "mode": "bogus"}), maelstrom.MalformedRequest)
	wantCode(t, "bad lease id", c.call("n1", map[string]any{"type": "release", "resource": "r", "lease_id": "zz"}), maelstrom.MalformedRequest)
}

// leaderOf is the leader the named group of srv knows ("" if none, or
// not started).
func leaderOf(srv *Server, name string) string {
	srv.mu.Lock()
	g := srv.groups[name]
	srv.mu.Unlock()
	switch g := g.(type) {
	case *kvReplica:
		_, id := g.raft.LeaderWithID()
		return string(id)
	case *lockGroup:
		p, _ := g.Leader()
		return p.ID
	}
	return ""
}

func leaderKnown(srv *Server, name string) bool { return leaderOf(srv, name) != "" }

// TestGroupsElectAtInit: goal — both Raft groups start at init, so each
// has elected a leader before any client request and the first operation
// of either workload is served at once, not after an election it set off.
// Method: a 3-node cluster that got only init; wait (generous deadline,
// polling the nodes' Raft state, no client message) until every node's kv
// and lock group knows a leader; then the first write and the first
// acquire, sent once each without callOK's retries, must succeed.
func TestGroupsElectAtInit(t *testing.T) {
	c := newCluster(t, 3)
	deadline := time.Now().Add(15 * time.Second)
	for id, srv := range c.servers {
		for _, name := range []string{groupKV, groupLock} {
			for !leaderKnown(srv, name) {
				if time.Now().After(deadline) {
					t.Fatalf("%s's %s group knows no leader 15 s after init, with no client request sent", id, name)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	wantType(t, "first write", c.call("n1", map[string]any{"type": "write", "key": 1, "value": 1}), "write_ok")
	if b := c.call("n2", map[string]any{"type": "acquire", "resource": "r", "ttl": 5000}); b["type"] != "acquire_ok" || b["granted"] != true {
		t.Fatalf("first acquire: %v", b)
	}
}
