package codec

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/lock"
)

func leaseID(label byte) lock.LeaseID { return lock.LeaseID{label} }

// TestResultRoundTrip: goal — what a leader answers a forwarded command
// reaches the follower unchanged (every flag, the lease, a status with
// holders and queue, a multi-lock's leases and blocker, a deadlock's
// cycle), and damaged
// answers are refused. Method: round trips, every truncation, a wrong
// version byte and a trailing byte.
func TestResultRoundTrip(t *testing.T) {
	lease := lock.Lease{ID: leaseID('a'), ClientID: "c", Mode: lock.Shared, Token: 7, ExpiresAt: -5, TTLMs: 100}
	results := []lock.Result{
		{},
		{Code: lock.LeaseEnded, Lease: lease, LogTime: 3},
		{Granted: true, Lease: lease, LogTime: 1 << 40},
		{Queued: true, Position: 300, Lease: lock.Lease{ID: leaseID('b')}},
		{Status: &lock.Status{Resource: "r"}},
		{Status: &lock.Status{
			Resource: "r\x00s",
			Holders:  []lock.Lease{lease, {ID: leaseID('c'), ClientID: "d", Mode: lock.Shared, Token: 9, ExpiresAt: 8, TTLMs: 1}},
			Queue: []lock.Waiter{{ID: leaseID('e'), ClientID: "f", Mode: lock.Exclusive, Deadline: 99},
				{ID: leaseID('g'), Mode: lock.Shared, Deadline: -1}},
		}},
		{Granted: true, Lease: lock.Lease{ID: leaseID('m'), Token: 3}, Blocked: "q",
			Leases: []lock.Lease{{ID: leaseID('m'), Token: 3}, {ID: lock.ManyLeaseID(leaseID('m'), 1), Token: 4, ClientID: "c"}}},
		{Status: &lock.Status{Resource: "pool", Holders: []lock.Lease{lease}, Permits: 3}},
		{Code: lock.PermitsMismatch, Status: &lock.Status{Resource: "pool", Permits: lock.MaxPermits}},
		{Code: lock.Deadlock, Cycle: []string{"b", "a\x00c"}, Blocked: "x", LogTime: 5},
		{Code: lock.Deadlock, Cycle: []string{"b"}, Status: &lock.Status{Resource: "pool", Permits: 2}},
		// Grace windows (version 5): a lease in its window among held ones,
		// also in a semaphore's status.
		{Status: &lock.Status{Resource: "r", Holders: []lock.Lease{lease,
			{ID: leaseID('h'), Mode: lock.Shared, Token: 11, ExpiresAt: 50, TTLMs: 100, GraceMs: 30, GraceUntil: 80}}}},
		{Granted: true, Lease: lock.Lease{ID: leaseID('n'), Token: 5, TTLMs: 100, GraceMs: 100},
			Leases: []lock.Lease{{ID: leaseID('n'), Token: 5, TTLMs: 100, GraceMs: 100}}},
		{Status: &lock.Status{Resource: "pool", Permits: 2, Holders: []lock.Lease{lease,
			{ID: leaseID('p'), Mode: lock.Exclusive, Token: 12, ExpiresAt: 50, TTLMs: 100, GraceMs: 30, GraceUntil: 80}}}},
	}
	for i, res := range results {
		enc := AppendResult([]byte("prefix"), &res)[len("prefix"):]
		got, err := DecodeResult(enc)
		if err != nil {
			t.Fatalf("result %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, res) {
			t.Errorf("result %d round trip\n got  %+v %+v\n want %+v %+v", i, got, got.Status, res, res.Status)
		}
		for n := 0; n < len(enc); n++ {
			if _, err := DecodeResult(enc[:n]); !errors.Is(err, lock.ErrCorrupt) {
				t.Errorf("result %d truncated to %d of %d bytes: err %v", i, n, len(enc), err)
			}
		}
		wrong := bytes.Clone(enc)
		wrong[0]++
		if _, err := DecodeResult(wrong); !errors.Is(err, lock.ErrCorrupt) {
			t.Errorf("result %d with version %d: err %v", i, wrong[0], err)
		}
		if _, err := DecodeResult(append(enc, 9)); !errors.Is(err, lock.ErrCorrupt) || !strings.Contains(err.Error(), ": 1 trailing bytes") {
			t.Errorf("result %d with a trailing byte: err %v", i, err)
		}
	}
}

// TestResultVersion1Decodes: goal — a reply from a member that still
// writes version 1 (no Leases, no Blocked) decodes. Method: a version-2
// encoding cut to what version 1 holds, its version byte set to 1.
func TestResultVersion1Decodes(t *testing.T) {
	v1 := AppendResult(nil, &lock.Result{Queued: true, Position: 2})
	v1 = v1[:len(v1)-2] // no leases, empty blocked: what version 1 lacks
	v1[0] = 1
	if old, err := DecodeResult(v1); err != nil || !old.Queued || old.Position != 2 {
		t.Fatalf("version-1 result: %+v, %v", old, err)
	}
}

// TestResultVersionIsTheOldestThatHoldsIt: goal — a result without a
// semaphore's permits is written as version 2, which members before
// semaphores read; one with them as version 3; a version 3 result
// without a status is corrupt.
func TestResultVersionIsTheOldestThatHoldsIt(t *testing.T) {
	plain := AppendResult(nil, &lock.Result{Status: &lock.Status{Resource: "r"}})
	sem := AppendResult(nil, &lock.Result{Status: &lock.Status{Resource: "r", Permits: 2}})
	if plain[0] != 2 || sem[0] != 3 {
		t.Fatalf("versions %d and %d, want 2 and 3", plain[0], sem[0])
	}
	bad := AppendResult(nil, &lock.Result{})
	bad[0] = 3
	if _, err := DecodeResult(append(bad, 2)); !errors.Is(err, lock.ErrCorrupt) {
		t.Fatalf("version 3 without a status: %v, want ErrCorrupt", err)
	}
}

// TestResultWithoutCycleIsNotVersion4: goal — only a result with a cycle
// is written as version 4, so members that predate deadlock detection read
// every answer but a deadlock's. Method: the version byte of both kinds.
func TestResultWithoutCycleIsNotVersion4(t *testing.T) {
	if v := AppendResult(nil, &lock.Result{Queued: true})[0]; v != 2 {
		t.Errorf("plain result written as version %d, want 2", v)
	}
	if v := AppendResult(nil, &lock.Result{Code: lock.Deadlock, Cycle: []string{"a", "b"}})[0]; v != 4 {
		t.Errorf("deadlock result written as version %d, want 4", v)
	}
}
