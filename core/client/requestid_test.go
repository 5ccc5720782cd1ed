package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/client"
	"github.com/lockstep/lockstep/core/placement"
)

// TestRequestIDNamesOneAcquireOfOneResource: goal — the Go client cannot
// send one request id for two resources: a caller's RequestID names one
// acquire of one resource (or one list), so reusing it for other
// resources, on the same shard or on another, takes each its own lease
// (never request_id_reused, which a caller could not foresee without
// knowing placement), while the same id and resource again is answered
// with the first lease (the id still makes a repeated call idempotent).
// Method: a real 2-shard server; RequestID "job-1" for two resources on
// one shard, one on the other and an acquire_many, then again for the
// first resource.
func TestRequestIDNamesOneAcquireOfOneResource(t *testing.T) {
	const shards = 2
	url := realServer(t, shards)
	c := newClient(t, url, "worker")
	var on [shards + 1][]string
	for i := 0; len(on[1]) < 4 || len(on[2]) < 1; i++ {
		r := fmt.Sprintf("r%d", i)
		s := placement.Of(r, shards)
		on[s] = append(on[s], r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := client.AcquireOptions{TTL: time.Minute, RequestID: "job-1"}
	var first *client.Lease
	for i, r := range []string{on[1][0], on[1][1], on[2][0]} {
		l, err := c.Acquire(ctx, r, opts)
		if err != nil {
			t.Fatalf("acquire %s (shard %d) under the id used before: %v", r, placement.Of(r, shards), err)
		}
		if l.Resource() != r {
			t.Fatalf("acquire %s answered with a lease of %s", r, l.Resource())
		}
		if i == 0 {
			first = l
		}
	}
	leases, err := c.AcquireMany(ctx, on[1][2:4], client.AcquireManyOptions{AcquireOptions: opts})
	if err != nil || len(leases) != 2 {
		t.Fatalf("acquire_many %v under the id used before: %v", on[1][2:4], err)
	}
	again, err := c.Acquire(ctx, on[1][0], opts)
	if err != nil || again.ID() != first.ID() {
		t.Fatalf("the same id and resource again: %v, lease %v, want the first lease %s", err, again, first.ID())
	}
}
