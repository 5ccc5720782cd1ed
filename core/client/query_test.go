package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Goal: Status and Cluster decode the server's replies and query the
// right resource. Method: acquire on the fake, then query both.
func TestStatusAndCluster(t *testing.T) {
	_, srv := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{srv.URL}})
	ctx := context.Background()
	l, err := c.Acquire(ctx, "a/b c", AcquireOptions{TTL: time.Minute})
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	st, err := c.Status(ctx, "a/b c")
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if st.Resource != "a/b c" || len(st.Holders) != 1 || st.Holders[0].LeaseFingerprint != api.LeaseFingerprint(l.ID()) || st.Holders[0].FencingToken != l.Token() {
		t.Errorf("Status = %+v", st)
	}
	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatalf("Cluster: %v", err)
	}
	if cl.Leader != "n1" || len(cl.Nodes) != 1 {
		t.Errorf("Cluster = %+v", cl)
	}
	if _, err := c.Status(ctx, ""); err == nil {
		t.Error("Status of empty resource: no error")
	}
}

// Goal: a non-JSON error body (e.g. from a proxy) still yields an
// *APIError with the status and text, and not_holder JSON matches
// ErrNotHolder. Method: decode sample bodies directly.
func TestAPIErrorDecoding(t *testing.T) {
	err := newAPIError(502, []byte("  bad gateway\n"))
	if err.Status != 502 || err.Code != "" || err.Message != "bad gateway" {
		t.Errorf("newAPIError = %+v", err)
	}
	if !retryable(err) {
		t.Error("502 not retryable")
	}
	nh := newAPIError(409, []byte(`{"error":"x","code":"not_holder"}`))
	if !errors.Is(nh, ErrNotHolder) || retryable(nh) || nh.Code != api.CodeNotHolder {
		t.Errorf("409 not_holder decoded as %+v", nh)
	}
}
