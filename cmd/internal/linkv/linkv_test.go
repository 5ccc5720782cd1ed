package linkv

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestRelayAndHooks: goal — n0 applies requests on its copy, another node
// relays them to n0 and n0's answer back to the client, and the hooks see
// what they are for. Method: feed each node its input lines and decode
// what it wrote.
func TestRelayAndHooks(t *testing.T) {
	var out bytes.Buffer
	n0 := New(&out)
	var changed []string
	n0.Changed = func(self string, nodes []string, key, value json.RawMessage) {
		changed = append(changed, self+" "+strings.Join(nodes, ",")+" "+string(key)+"="+string(value))
	}
	n0.Run(strings.NewReader(strings.Join([]string{
		`{"src":"c1","dest":"n0","body":{"type":"init","msg_id":1,"node_id":"n0","node_ids":["n0","n1"]}}`,
		`{"src":"c1","dest":"n0","body":{"type":"write","msg_id":2,"key":1,"value":5}}`,
		`{"src":"c1","dest":"n0","body":{"type":"cas","msg_id":3,"key":1,"from":4,"to":6}}`,
		`{"src":"n1","dest":"n0","body":{"type":"relay","msg_id":4,"req":{"type":"read","msg_id":9,"key":1}}}`,
	}, "\n")))
	want := []string{
		`{"src":"n0","dest":"c1","body":{"in_reply_to":1,"msg_id":1,"type":"init_ok"}}`,
		`{"src":"n0","dest":"c1","body":{"in_reply_to":2,"msg_id":2,"type":"write_ok"}}`,
		`{"src":"n0","dest":"c1","body":{"code":22,"in_reply_to":3,"msg_id":3,"text":"from mismatch","type":"error"}}`,
		`{"src":"n0","dest":"n1","body":{"in_reply_to":4,"msg_id":4,"reply":{"type":"read_ok","value":5},"type":"relay_ok"}}`,
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("n0 wrote\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(changed) != 1 || changed[0] != "n0 n0,n1 1=5" {
		t.Errorf("Changed saw %q, want one write of 1=5 on n0", changed)
	}

	out.Reset()
	n1 := New(&out)
	n1.Intercept = func(b Body, reply func(map[string]any)) bool {
		if b.Type != "status" {
			return false
		}
		reply(map[string]any{"type": "status_ok"})
		return true
	}
	n1.Run(strings.NewReader(strings.Join([]string{
		`{"src":"c1","dest":"n1","body":{"type":"init","msg_id":1,"node_id":"n1","node_ids":["n0","n1"]}}`,
		`{"src":"c2","dest":"n1","body":{"type":"read","msg_id":7,"key":1}}`,
		`{"src":"n0","dest":"n1","body":{"type":"relay_ok","msg_id":3,"in_reply_to":2,"reply":{"type":"read_ok","value":5}}}`,
		`{"src":"c2","dest":"n1","body":{"type":"status","msg_id":8}}`,
	}, "\n")))
	want = []string{
		`{"src":"n1","dest":"c1","body":{"in_reply_to":1,"msg_id":1,"type":"init_ok"}}`,
		`{"src":"n1","dest":"n0","body":{"msg_id":2,"req":{"type":"read","msg_id":7,"key":1},"type":"relay"}}`,
		`{"src":"n1","dest":"c2","body":{"in_reply_to":7,"msg_id":3,"type":"read_ok","value":5}}`,
		`{"src":"n1","dest":"c2","body":{"in_reply_to":8,"msg_id":4,"type":"status_ok"}}`,
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("n1 wrote\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
