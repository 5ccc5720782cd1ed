package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// TestOverloadedMemberIsRetriedElsewhere: goal — a member's 503 overloaded
// (refused before anything happened) is, like 503 unavailable, an error
// the client retries on another endpoint. Method: endpoints busy (every
// request 503 overloaded) then a fake member; an acquire, a renew and a
// release must all succeed, each asking busy at most once.
func TestOverloadedMemberIsRetriedElsewhere(t *testing.T) {
	var refused atomic.Int32
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		refused.Add(1)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(api.Error{Code: api.CodeOverloaded, Error: "overloaded: busy"})
	}))
	defer busy.Close()
	_, fake := startFake(t)
	c := newTestClient(t, fastRetries(Config{Endpoints: []string{busy.URL, fake.URL}}))
	ctx := context.Background()
	lease, err := c.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("acquire past an overloaded member: %v", err)
	}
	if err := lease.Renew(ctx, 0); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if n := refused.Load(); n < 1 || n > 3 {
		t.Fatalf("busy was asked %d times, want 1..3 (at most once per call)", n)
	}
}
