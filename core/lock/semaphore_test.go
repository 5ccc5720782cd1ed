package lock

import (
	"errors"
	"testing"
)

// sem makes an acquire ask for a semaphore of permits.
func sem(cmd Command, permits uint32) Command {
	cmd.Permits = permits
	return cmd
}

// TestSemaphore: goal — a resource first acquired with permits N holds up
// to N exclusive holders, each its own lease and strictly larger token;
// the rest wait in FIFO order and are granted one per freed permit
// (release, expiry); an acquire naming other permits (or none) is refused
// while the resource lives, and N is forgotten once it is empty.
func TestSemaphore(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{name: "two permits, a third waits and gets the first freed", steps: []step{
			{at: 0, cmd: sem(acq("r", 'a', X, 100, 0), 2), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: sem(acq("r", 'b', X, 100, 0), 2), want: "granted b#2@101", events: []string{"grant r b#2@101"}},
			{at: 2, cmd: sem(acq("r", 'c', X, 100, 0), 2), want: "denied"},
			{at: 3, cmd: sem(acq("r", 'c', X, 100, 50), 2), want: "queued c pos=1", events: []string{"enqueue r c"}},
			{at: 4, cmd: sem(acq("r", 'd', X, 100, 50), 2), want: "queued d pos=2", events: []string{"enqueue r d"}},
			{at: 5, cmd: status("r"), want: "holders=[a#1@100 b#2@101] queue=[c d]"},
			{at: 6, cmd: rel("r", 'b'), want: "released b#2@101", events: []string{"release r b#2@101", "grant* r c#3@106"}},
			{at: 7, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "grant* r d#4@107"}},
			{at: 8, cmd: rel("r", 'c'), want: "released c#3@106", events: []string{"release r c#3@106", "freed r"}},
			{at: 9, cmd: rel("r", 'd'), want: "released d#4@107", events: []string{"release r d#4@107", "freed r"}},
		}},
		{name: "expiry of one permit grants the head", steps: []step{
			{at: 0, cmd: sem(acq("r", 'a', X, 10, 0), 2), want: "granted a#1@10", events: []string{"grant r a#1@10"}},
			{at: 0, cmd: sem(acq("r", 'b', X, 100, 0), 2), want: "granted b#2@100", events: []string{"grant r b#2@100"}},
			{at: 1, cmd: sem(acq("r", 'c', X, 100, 50), 2), want: "queued c pos=1", events: []string{"enqueue r c"}},
			{at: 12, cmd: tick(), want: "t=12", events: []string{"expire r a#1@10", "grant* r c#3@112"}},
		}},
		{name: "the limit must agree while the resource lives", steps: []step{
			{at: 0, cmd: sem(acq("r", 'a', X, 100, 0), 3), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: sem(acq("r", 'b', X, 100, 0), 2), want: "permits_mismatch"},
			{at: 1, cmd: acq("r", 'b', X, 100, 0), want: "permits_mismatch"},
			{at: 1, cmd: sem(acq("r", 'b', X, 100, 0), 1), want: "permits_mismatch"},
			{at: 1, cmd: acq("r", 'b', S, 100, 0), want: "permits_mismatch"},
			{at: 2, cmd: sem(acq("q", 'c', X, 100, 0), 0), want: "granted c#2@102", events: []string{"grant q c#2@102"}},
			{at: 3, cmd: sem(acq("q", 'd', X, 100, 0), 2), want: "permits_mismatch"},
			{at: 3, cmd: sem(acq("q", 'd', X, 100, 0), 1), want: "denied"},
			{at: 4, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "freed r"}},
			// Forgotten once empty: the next first use picks its own N.
			{at: 5, cmd: sem(acq("r", 'e', X, 100, 0), 2), want: "granted e#3@105", events: []string{"grant r e#3@105"}},
			{at: 5, cmd: sem(acq("r", 'f', X, 100, 0), 2), want: "granted f#4@105", events: []string{"grant r f#4@105"}},
		}},
		{name: "a waiter keeps the semaphore alive and its N", steps: []step{
			{at: 0, cmd: sem(acq("r", 'a', X, 100, 0), 2), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 0, cmd: sem(acq("r", 'b', X, 100, 0), 2), want: "granted b#2@100", events: []string{"grant r b#2@100"}},
			{at: 1, cmd: sem(acq("r", 'c', X, 100, 500), 2), want: "queued c pos=1", events: []string{"enqueue r c"}},
			{at: 2, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "grant* r c#3@102"}},
			{at: 3, cmd: sem(acq("r", 'd', X, 100, 0), 3), want: "permits_mismatch"},
		}},
		{name: "throughput policy never queues on a full semaphore", steps: []step{
			{at: 0, cmd: sem(acq("r", 'a', X, 100, 0), 2), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 0, cmd: sem(acq("r", 'b', X, 100, 0), 2), want: "granted b#2@100", events: []string{"grant r b#2@100"}},
			{at: 1, cmd: sem(throughput(acq("r", 'c', X, 100, 50)), 2), want: "denied"},
			{at: 2, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "freed r"}},
			{at: 3, cmd: sem(throughput(acq("r", 'c', X, 100, 50)), 2), want: "granted c#3@103", events: []string{"grant r c#3@103"}},
		}},
		{name: "a request id names its permits", steps: []step{
			{at: 0, cmd: as(sem(acq("r", 'a', X, 100, 0), 2), "c", "1"), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: as(sem(acq("r", 'b', X, 100, 0), 2), "c", "1"), want: "granted a#1@100"},
			{at: 1, cmd: as(sem(acq("r", 'b', X, 100, 0), 3), "c", "1"), want: "request_id_reused"},
			{at: 1, cmd: as(acq("r", 'b', X, 100, 0), "c", "1"), want: "request_id_reused"},
		}},
		{name: "renew of one permit leaves the others alone", steps: []step{
			{at: 0, cmd: sem(acq("r", 'a', X, 10, 0), 2), want: "granted a#1@10", events: []string{"grant r a#1@10"}},
			{at: 0, cmd: sem(acq("r", 'b', X, 10, 0), 2), want: "granted b#2@10", events: []string{"grant r b#2@10"}},
			{at: 5, cmd: renew("r", 'b', 100), want: "renewed b#2@105", events: []string{"renew r b#2@105"}},
			{at: 11, cmd: status("r"), want: "holders=[b#2@105] queue=[]", events: []string{"expire r a#1@10", "freed r"}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, DefaultConfig(), tc.steps) })
	}
}

// TestSemaphoreStatusAndMismatchSayN: goal — status reports a semaphore's
// N (and 0 for a plain lock), and a mismatch refusal says what the
// resource is, so the caller's error can name it.
func TestSemaphoreStatusAndMismatchSayN(t *testing.T) {
	s := mustNew(t, DefaultConfig())
	applyAt(s, 1, 0, sem(acq("r", 'a', X, 100, 0), 3))
	applyAt(s, 2, 0, acq("q", 'b', X, 100, 0))
	if st := s.Status("r"); st.Permits != 3 || len(st.Holders) != 1 {
		t.Fatalf("status r = %+v, want permits 3 and one holder", st)
	}
	if st := s.Status("q"); st.Permits != 0 {
		t.Fatalf("status q = %+v, want permits 0", st)
	}
	res, _ := applyAt(s, 3, 1, sem(acq("r", 'c', X, 100, 0), 2))
	if res.Code != PermitsMismatch || res.Status == nil || res.Status.Permits != 3 {
		t.Fatalf("mismatch result %+v, want PermitsMismatch naming permits 3", res)
	}
	res, _ = applyAt(s, 4, 1, Command{Op: OpAcquireMany, Resources: []string{"q2", "r"}, ClientID: "m", LeaseID: lid('m'), Mode: X, TTLMs: 100})
	if res.Code != PermitsMismatch || res.Blocked != "r" {
		t.Fatalf("acquire_many on a semaphore: %+v, want PermitsMismatch blocked by r", res)
	}
	if st := s.Status("q2"); len(st.Holders) != 0 {
		t.Fatalf("refused acquire_many left q2 held: %+v", st)
	}
}

// TestCheckPermits: goal — permits above MaxPermits, permits with shared
// mode, and permits on anything but a single acquire are refused before
// the log (ErrBadPermits, an ErrInvalid), and 0..MaxPermits pass.
func TestCheckPermits(t *testing.T) {
	cfg := DefaultConfig()
	ok := []Command{sem(acq("r", 'a', X, 100, 0), 0), sem(acq("r", 'a', X, 100, 0), 1), sem(acq("r", 'a', S, 100, 0), 1),
		sem(acq("r", 'a', X, 100, 0), 2), sem(acq("r", 'a', X, 100, 0), MaxPermits)}
	for _, c := range ok {
		if err := cfg.Check(&c); err != nil {
			t.Errorf("permits %d mode %v: %v", c.Permits, c.Mode, err)
		}
	}
	many := Command{Op: OpAcquireMany, Resources: []string{"a"}, ClientID: "c", LeaseID: lid('a'), Mode: X, TTLMs: 100, Permits: 2}
	bad := []Command{sem(acq("r", 'a', X, 100, 0), MaxPermits+1), sem(acq("r", 'a', S, 100, 0), 2), many,
		sem(rel("r", 'a'), 2)}
	for _, c := range bad {
		err := cfg.Check(&c)
		if !errors.Is(err, ErrBadPermits) || !errors.Is(err, ErrInvalid) {
			t.Errorf("op %v permits %d mode %v: %v, want ErrBadPermits", c.Op, c.Permits, c.Mode, err)
		}
	}
}

// TestSemaphoreSnapshotCarriesN: goal — a snapshot keeps each semaphore's
// N, so a restored replica refuses the same mismatches and grants the
// same permits; a version 6 snapshot naming permits 1 or above
// MaxPermits is corrupt.
func TestSemaphoreSnapshotCarriesN(t *testing.T) {
	s := mustNew(t, DefaultConfig())
	applyAt(s, 1, 0, sem(acq("r", 'a', X, 100, 0), 2))
	restored := mustNew(t, DefaultConfig())
	if err := restored.Restore(s.Snapshot()); err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]*State{"live": s, "restored": restored} {
		if res, _ := applyAt(st, 2, 1, sem(acq("r", 'b', X, 100, 0), 2)); !res.Granted || res.Lease.Token != 2 {
			t.Errorf("%s: second permit %+v, want granted #2", name, res)
		}
		if res, _ := applyAt(st, 3, 1, sem(acq("r", 'c', X, 100, 0), 2)); res.Granted || res.Code != OK {
			t.Errorf("%s: third permit %+v, want denied", name, res)
		}
	}
	snap := s.Snapshot()
	// The permits follow the name "r" (a length byte, then the name).
	at := len(snapshotMagic)
	d := decoder{b: snap, off: at, version: 6}
	for range 6 {
		d.uvarint()
	}
	d.uvarint() // resource count
	d.string()
	if d.err != nil || snap[d.off] != 2 {
		t.Fatalf("permits byte not where expected (off %d): %v", d.off, d.err)
	}
	for _, p := range []byte{1, 0x81} {
		bad := append([]byte(nil), snap...)
		bad[d.off] = p
		if p == 0x81 {
			bad = append(bad[:d.off+1], append([]byte{0x08}, bad[d.off+1:]...)...) // 1025
		}
		if err := mustNew(t, DefaultConfig()).Restore(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("permits byte %#x: restore %v, want ErrCorrupt", p, err)
		}
	}
}

// TestSemaphoreQuotaCountsEachPermit: goal — a namespace's held quota
// counts each permit as one lease: with max held 2, a semaphore of 3 in
// that namespace grants two permits and refuses the third as
// QuotaExceeded, and grants it again once a permit is released.
func TestSemaphoreQuotaCountsEachPermit(t *testing.T) {
	s := mustNew(t, DefaultConfig())
	quota := func(cmd Command) Command {
		cmd.Quota = Quota{Held: 2}
		return sem(cmd, 3)
	}
	for i, l := range []byte{'a', 'b'} {
		if res, _ := applyAt(s, uint64(i+1), 0, quota(acq("ns:pool", l, X, 100, 0))); !res.Granted {
			t.Fatalf("permit %c: %+v", l, res)
		}
	}
	if res, _ := applyAt(s, 3, 0, quota(acq("ns:pool", 'c', X, 100, 0))); res.Code != QuotaExceeded {
		t.Fatalf("third permit over a held quota of 2: %+v, want QuotaExceeded", res)
	}
	applyAt(s, 4, 1, rel("ns:pool", 'a'))
	if res, _ := applyAt(s, 5, 1, quota(acq("ns:pool", 'c', X, 100, 0))); !res.Granted {
		t.Fatalf("permit after a release: %+v", res)
	}
}
