package lockd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/mux"
	"github.com/lockstep/lockstep/core/node"
)

// TestMemberTrafficStaysOffThePublicPort: goal — the internal forward
// endpoint is not served on the public API port, it is served on the member
// (Raft) port, and its errors are JSON with a code. Method: POST raw bytes
// to /internal/propose on the public port (404 JSON), then to the member
// port through the forward route (400 JSON invalid_argument for garbage).
func TestMemberTrafficStaysOffThePublicPort(t *testing.T) {
	c := startCluster(t, lockd.LogStoreWAL)
	lead := c.leader()
	p := c.peers[lead]

	resp, err := http.Post("http://"+p.HTTPAddr+node.ForwardPath, "application/octet-stream", strings.NewReader("\x02junk"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e api.Error
	if resp.StatusCode != http.StatusNotFound || json.Unmarshal(body, &e) != nil || e.Code != api.CodeNotFound {
		t.Fatalf("public port answered %d %s for the internal endpoint, want 404 not_found", resp.StatusCode, body)
	}

	// Every group's route refuses it: the metadata group (0) and shard 1.
	for _, g := range []uint64{0, 1} {
		member := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return mux.Dial(ctx, addr, mux.Forward, g)
		}}}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.RaftAddr+node.ForwardPath, bytes.NewReader([]byte("\x02junk")))
		resp, err = member.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		var fe struct{ Error, Code string }
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(body, &fe) != nil || fe.Code != "invalid_argument" || fe.Error == "" {
			t.Fatalf("group %d: member port answered %d %q to a corrupt command, want 400 JSON invalid_argument", g, resp.StatusCode, body)
		}
	}
}
