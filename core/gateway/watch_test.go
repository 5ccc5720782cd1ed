package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// TestWatchThroughGateway: goal — the gateway relays a watch as a stream:
// the header comes at once (not after RequestTimeout), a grant made after
// the watch started arrives on it, and a refusal is the member's own.
// Method: a real 3-member, 3-shard cluster and a gateway whose
// RequestTimeout is long (a buffered relay would hold the header that
// long); watch a resource through the gateway, acquire it through the
// gateway, read the grant line; then a watch with no resource must be the
// member's 400 invalid_argument.
func TestWatchThroughGateway(t *testing.T) {
	c := startCluster(t)
	g := startGateway(t, c.addrs(), time.Hour)
	waitLeaders(t, g)
	base := "http://" + g.Addr()
	res := resourceOn(t, "watched", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+api.PathWatch+"?resource="+url.QueryEscape(res), nil)
	opened := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("watch through the gateway: %v %v", resp, err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("watch Content-Type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	var head api.WatchMessage
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &head) != nil || head.Start[2] == 0 {
		t.Fatalf("watch header %q %v, want a start on shard 2", lines.Text(), lines.Err())
	}
	if wait := time.Since(opened); wait >= g.cfg.RequestTimeout {
		t.Fatalf("header after %v: buffered until the request timeout", wait)
	}
	code, body := exchange(t, http.MethodPost, base+api.PathAcquire,
		fmt.Sprintf(`{"resource":%q,"client_id":"gw","ttl":10000}`, res))
	var acq api.AcquireResponse
	if code != http.StatusOK || json.Unmarshal(body, &acq) != nil || !acq.Granted {
		t.Fatalf("acquire %s = %d %s", res, code, body)
	}
	var m api.WatchMessage
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &m) != nil || m.Shard != 2 || len(m.Events) != 1 ||
		m.Events[0].Kind != "grant" || m.Events[0].FencingToken != acq.FencingToken {
		t.Fatalf("watch line %q %v, want the grant of token %d", lines.Text(), lines.Err(), acq.FencingToken)
	}

	code, body = exchange(t, http.MethodGet, base+api.PathWatch, "")
	var e api.Error
	if code != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || e.Code != api.CodeInvalidArgument {
		t.Fatalf("watch without a resource = %d %s, want 400 invalid_argument", code, body)
	}
}

// TestWatchRelayEndsAsTheMemberEnds: goal — the relayed stream passes the
// caller's Authorization header, ends cleanly when the member ends it
// cleanly, and is cut off when the member's is (so a watcher resumes
// instead of taking a dead member's stream for a finished one). Method: a
// fake member that streams two lines and then either ends or aborts its
// connection; a gateway joined only to it; read the relayed body to its
// end.
func TestWatchRelayEndsAsTheMemberEnds(t *testing.T) {
	for _, abort := range []bool{false, true} {
		t.Run(fmt.Sprintf("abort=%v", abort), func(t *testing.T) {
			member := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != api.PathWatch {
					http.NotFound(w, r)
					return
				}
				if r.Header.Get("Authorization") != "Bearer secret" {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				w.Header().Set("Content-Type", "application/x-ndjson")
				_, _ = io.WriteString(w, "{\"start\":{\"1\":5}}\n")
				w.(http.Flusher).Flush()
				_, _ = io.WriteString(w, "{\"shard\":1,\"index\":5}\n")
				w.(http.Flusher).Flush()
				if abort {
					panic(http.ErrAbortHandler)
				}
			}))
			defer member.Close()
			cfg := DefaultConfig()
			cfg.Join = []string{strings.TrimPrefix(member.URL, "http://")}
			gw, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			front := httptest.NewServer(gw.Handler())
			defer front.Close()
			req, _ := http.NewRequest(http.MethodGet, front.URL+api.PathWatch+"?resource=r", nil)
			req.Header.Set("Authorization", "Bearer secret")
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("watch: %v %v", resp, err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if !strings.HasPrefix(string(body), "{\"start\":{\"1\":5}}\n{\"shard\":1,\"index\":5}\n") {
				t.Fatalf("relayed body %q", body)
			}
			if abort && err == nil {
				t.Fatal("member's stream was cut off, the relayed one ended cleanly")
			}
			if !abort && err != nil {
				t.Fatalf("member ended its stream cleanly, the relayed one: %v", err)
			}
		})
	}
}
