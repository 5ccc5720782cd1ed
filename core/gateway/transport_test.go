package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// refusingTransport records the hosts asked and refuses every request.
type refusingTransport struct {
	mu    sync.Mutex
	hosts []string
}

func (t *refusingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.hosts = append(t.hosts, r.URL.Host)
	t.mu.Unlock()
	return nil, errors.New("refused")
}

// TestGatewayOverOwnTransport: goal — a gateway built with Config.Transport
// sends everything through it and serves through Handler with no listener
// (as the simulator runs it). Method: a transport that refuses all; an
// acquire through Handler must reach the join address through it and end
// unavailable, like a gateway whose members are all down.
func TestGatewayOverOwnTransport(t *testing.T) {
	tr := &refusingTransport{}
	cfg := DefaultConfig()
	cfg.Join, cfg.Transport = []string{"member1:7070"}, tr
	cfg.RequestTimeout = 300 * time.Millisecond
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); g.Run(ctx) }()
	defer func() { cancel(); <-done }()

	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, api.PathAcquire,
		strings.NewReader(`{"resource":"r","client_id":"c","ttl":1000}`))
	g.Handler().ServeHTTP(rec, req)
	if rec.Code < 500 {
		t.Fatalf("acquire with every member refusing = %d %s, want 5xx", rec.Code, rec.Body)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.hosts) == 0 || tr.hosts[0] != "member1:7070" {
		t.Fatalf("transport saw hosts %v, want member1:7070", tr.hosts)
	}
}
