package lockd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/client"
	"github.com/lockstep/lockstep/core/lockd"
)

// TestClientAgainstRealCluster: goal — the Go client works against real
// lockd members: keep-alive holds a lease across a leader crash, waiters
// queue and time out with ErrNotGranted, a released lease goes to the next
// waiter with a larger token. Method: three members on loopback TCP, the
// client configured with all endpoints, the leader stopped mid-lease.
func TestClientAgainstRealCluster(t *testing.T) {
	c := startCluster(t, lockd.LogStoreWAL)
	lead := c.leader()
	var endpoints []string
	for i := range c.peers {
		endpoints = append(endpoints, c.url(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := client.New(client.Config{Endpoints: endpoints, ClientID: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	// A TTL that outlasts an election on a loaded machine: the keep-alive
	// renews at TTL/2, so the new leader has TTL/2 to take over.
	lease, err := cl.Acquire(ctx, "job", client.AcquireOptions{TTL: 4 * time.Second, KeepAlive: true})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	other, err := client.New(client.Config{Endpoints: endpoints, ClientID: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Acquire(ctx, "job", client.AcquireOptions{TTL: time.Second, Wait: 300 * time.Millisecond}); !errors.Is(err, client.ErrNotGranted) {
		t.Fatalf("second acquire while held = %v, want ErrNotGranted", err)
	}

	c.stop(lead)
	c.leader()
	// Several TTLs pass: only the keep-alive (through the new leader) keeps it.
	time.Sleep(9 * time.Second)
	if !lease.Valid() {
		t.Fatalf("lease lost across the leader crash: %v", lease.Err())
	}
	st := status(t, c.url((lead+1)%3), "job")
	if len(st.Holders) != 1 || st.Holders[0].LeaseFingerprint != api.LeaseFingerprint(lease.ID()) {
		t.Fatalf("holders = %+v, want %s", st.Holders, lease.ID())
	}

	next := make(chan *client.Lease, 1)
	go func() {
		l, err := other.Acquire(ctx, "job", client.AcquireOptions{TTL: time.Second, Wait: 10 * time.Second})
		if err != nil {
			t.Errorf("queued acquire: %v", err)
		}
		next <- l
	}()
	time.Sleep(300 * time.Millisecond)
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	got := <-next
	if got == nil || got.Token() <= lease.Token() {
		t.Fatalf("next holder %v, want a token above %d", got, lease.Token())
	}
	_ = got.Release(ctx)
}
