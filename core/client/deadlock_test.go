package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Goal: a 409 deadlock answer reaches the caller at once (a definite
// refusal: no retry) as an error matching ErrDeadlock that names the
// cycle; other 409s do not match it. Method: a server answering every
// acquire with the error body lockd writes.
func TestAcquireDeadlock(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(api.Error{Code: api.CodeDeadlock, Error: "deadlock", Cycle: []string{"me", "other"}})
	}))
	defer srv.Close()
	c := newTestClient(t, fastRetries(Config{Endpoints: []string{srv.URL}, ClientID: "me", MaxAttempts: 4}))
	_, err := c.Acquire(context.Background(), "x", AcquireOptions{TTL: time.Minute, Wait: time.Second})
	if !errors.Is(err, ErrDeadlock) || errors.Is(err, ErrNotHolder) {
		t.Fatalf("Acquire error %v, want ErrDeadlock", err)
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) || !slices.Equal(apiErr.Cycle, []string{"me", "other"}) || apiErr.Status != 409 {
		t.Fatalf("error %#v, want 409 with cycle [me other]", apiErr)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("server saw %d acquires, want 1 (not retried)", n)
	}
	if errors.Is(&APIError{Status: 409, Code: api.CodeNotHolder}, ErrDeadlock) {
		t.Error("not_holder matches ErrDeadlock")
	}
}
