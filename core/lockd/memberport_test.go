package lockd_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/forward"
	"github.com/lockstep/lockstep/core/link"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/mux"
)

// TestMemberTrafficStaysOffThePublicPort: goal — forwarding is not served
// on the public API port; it is served on the member (Raft) port, over the
// member link, and a corrupt command sent there is refused as invalid for
// every group. Method: POST raw bytes to an internal-looking path on the
// public port (404 JSON), then send a corrupt command over a link to the
// member port for the metadata group (0) and shard 1.
func TestMemberTrafficStaysOffThePublicPort(t *testing.T) {
	c := startCluster(t, lockd.LogStoreWAL)
	lead := c.leader()
	p := c.peers[lead]

	resp, err := http.Post("http://"+p.HTTPAddr+"/internal/propose", "application/octet-stream", strings.NewReader("\x02junk"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e api.Error
	if resp.StatusCode != http.StatusNotFound || json.Unmarshal(body, &e) != nil || e.Code != api.CodeNotFound {
		t.Fatalf("public port answered %d %s for an internal path, want 404 not_found", resp.StatusCode, body)
	}

	fwd := forward.New(outsideLink(t, func(ctx context.Context, addr string, stream bool) (net.Conn, error) {
		if stream {
			return mux.Dial(ctx, addr, mux.Stream, 0)
		}
		return mux.Dial(ctx, addr, mux.Link, 0)
	}), nil)
	for _, g := range []uint64{0, 1} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := fwd.For(g).Forward(ctx, p, []byte("\x02junk"))
		cancel()
		if !errors.Is(err, lock.ErrInvalid) {
			t.Fatalf("group %d: member port answered %v to a corrupt command, want invalid", g, err)
		}
	}
}

// outsideLink is a link from a process that is no member: it dials member
// ports with dial and serves nothing. It is closed when t ends.
func outsideLink(t *testing.T, dial func(ctx context.Context, addr string, stream bool) (net.Conn, error)) *link.TCP {
	t.Helper()
	cfg := link.DefaultTCPConfig()
	var err error
	if cfg.Conns, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	cfg.Local = cfg.Conns.Addr().String()
	if cfg.Streams, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	cfg.Dial = dial
	l, err := link.NewTCP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}
