package lock

import (
	"bytes"
	"maps"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func quota(cmd Command, q Quota) Command {
	cmd.Quota = q
	return cmd
}

// TestQuotaTable: goal — each limit refuses the acquire that would pass
// it with QuotaExceeded and names that limit (Result.Blocked, so the 429
// can say which quota was hit), counts only its own namespace (and
// client), frees up when a lease ends, and a queued request counts
// against the held limit too. Method: scripted commands with the expected
// result codes and limits.
func TestQuotaTable(t *testing.T) {
	held2 := Quota{Held: 2}
	steps := []struct {
		name  string
		cmd   Command
		want  Code
		limit string // the limit a QuotaExceeded names
	}{
		{"first held", quota(acq("a:1", 'a', Exclusive, 60_000, 0), held2), OK, ""},
		{"second held", quota(acq("a:2", 'b', Exclusive, 60_000, 0), held2), OK, ""},
		{"third held refused", quota(acq("a:3", 'c', Exclusive, 60_000, 0), held2), QuotaExceeded, "held"},
		{"other namespace unaffected", quota(acq("b:1", 'd', Exclusive, 60_000, 0), held2), OK, ""},
		{"no quota, no limit", acq("a:4", 'e', Exclusive, 60_000, 0), OK, ""},
		{"release frees a slot", rel("a:4", 'e'), OK, ""},
		{"release frees a slot 2", rel("a:1", 'a'), OK, ""},
		{"held again", quota(acq("a:3", 'c', Exclusive, 60_000, 0), held2), OK, ""},
		{"queue counts as held", quota(acq("a:3", 'f', Exclusive, 60_000, 5_000), held2), QuotaExceeded, "held"},
		{"try-lock on a held lock is not the quota's", quota(acq("a:3", 'f', Exclusive, 60_000, 0), held2), OK, ""},
		{"queued limit", quota(acq("b:1", 'g', Exclusive, 60_000, 5_000), Quota{Queued: 1}), OK, ""},
		{"queued limit hit", quota(acq("b:1", 'h', Exclusive, 60_000, 5_000), Quota{Queued: 1}), QuotaExceeded, "queued"},
		{"client held limit", quota(acq("c:1", 'i', Exclusive, 60_000, 0), Quota{ClientHeld: 1}), OK, ""},
		{"same client refused", quota(as(acq("c:2", 'j', Exclusive, 60_000, 0), "client-i", ""), Quota{ClientHeld: 1}), QuotaExceeded, "client_held"},
		{"other client fine", quota(acq("c:2", 'k', Exclusive, 60_000, 0), Quota{ClientHeld: 1}), OK, ""},
		{"client queued limit", quota(acq("c:1", 'l', Exclusive, 60_000, 5_000), Quota{ClientQueued: 1}), OK, ""},
		{"client queued hit", quota(as(acq("c:2", 'm', Exclusive, 60_000, 5_000), "client-l", ""), Quota{ClientQueued: 1}), QuotaExceeded, "client_queued"},
		{"multi over held", quota(Command{Op: OpAcquireMany, Resources: []string{"d:1", "d:2", "d:3"}, ClientID: "x", LeaseID: lid('n'), Mode: Exclusive, TTLMs: 60_000}, held2), QuotaExceeded, "held"},
		{"multi within held", quota(Command{Op: OpAcquireMany, Resources: []string{"d:1", "d:2"}, ClientID: "x", LeaseID: lid('o'), Mode: Exclusive, TTLMs: 60_000}, held2), OK, ""},
		{"multi over client held", quota(Command{Op: OpAcquireMany, Resources: []string{"e:1", "e:2"}, ClientID: "x", LeaseID: lid('p'), Mode: Exclusive, TTLMs: 60_000}, Quota{Held: 5, ClientHeld: 1}), QuotaExceeded, "client_held"},
	}
	s := mustNew(t, DefaultConfig())
	for i, st := range steps {
		res, _ := s.Apply(Entry{Index: uint64(i + 1), Term: 1, Command: st.cmd})
		if res.Code != st.want || res.Code == QuotaExceeded && res.Blocked != st.limit {
			t.Fatalf("step %d %s: code %v limit %q, want %v %q", i, st.name, res.Code, res.Blocked, st.want, st.limit)
		}
	}
	if held, queued := s.Usage("a", ""); held != 2 || queued != 0 {
		t.Fatalf("namespace a: held %d queued %d, want 2 and 0", held, queued)
	}
	if held, queued := s.Usage("c", "client-l"); held != 0 || queued != 1 {
		t.Fatalf("client-l in c: held %d queued %d, want 0 and 1", held, queued)
	}
}

// TestQuotaProperty: goal — under any interleaving of acquires (try and
// waiting, single and multi), releases, cancels and expiries, with every
// acquire carrying the same quota: the kept counts equal a recount of the
// table, no namespace or client ever passes a limit (held counting its
// queue entries), a refused acquire changes nothing but what a tick at
// the same moment and settling its resources would, and a restored
// snapshot has the same counts.
// Method: rapid draws the log.
func TestQuotaProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		q := Quota{
			Held: uint32(rapid.IntRange(0, 4).Draw(t, "held")), Queued: uint32(rapid.IntRange(0, 3).Draw(t, "queued")),
			ClientHeld: uint32(rapid.IntRange(0, 3).Draw(t, "clientHeld")), ClientQueued: uint32(rapid.IntRange(0, 2).Draw(t, "clientQueued")),
		}
		names := []string{"a:1", "a:2", "a:3", "b:1", "plain"}
		clients := []string{"c1", "c2"}
		s := mustNew(t, DefaultConfig())
		var leases []Command
		now := int64(0)
		for i := range rapid.IntRange(1, 60).Draw(t, "steps") {
			index := uint64(i + 1)
			var cmd Command
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0, 1:
				var id LeaseID
				id[0], id[1] = byte(i), 1
				cmd = Command{Op: OpAcquire, Resource: rapid.SampledFrom(names).Draw(t, "res"),
					ClientID: rapid.SampledFrom(clients).Draw(t, "client"), LeaseID: id,
					Mode: Mode(rapid.IntRange(1, 2).Draw(t, "mode")), TTLMs: rapid.Int64Range(1, 5_000).Draw(t, "ttl"),
					WaitMs: rapid.SampledFrom([]int64{0, 0, 3_000}).Draw(t, "wait"), Quota: q}
				if rapid.IntRange(0, 3).Draw(t, "many") == 0 {
					cmd.Op, cmd.Resource = OpAcquireMany, ""
					cmd.Resources = []string{"a:1", rapid.SampledFrom([]string{"a:2", "b:1"}).Draw(t, "second")}
				}
				leases = append(leases, cmd)
			case 2:
				if len(leases) == 0 {
					continue
				}
				l := rapid.SampledFrom(leases).Draw(t, "lease")
				cmd = Command{Op: OpRelease, Resource: l.Resource, LeaseID: l.LeaseID}
				if l.Op == OpAcquireMany {
					cmd.Resource = l.Resources[0]
				}
			case 3:
				if len(leases) == 0 {
					continue
				}
				l := rapid.SampledFrom(leases).Draw(t, "waiter")
				cmd = Command{Op: OpCancel, Resource: l.Resource, Resources: l.Resources, LeaseID: l.LeaseID}
			default:
				now += rapid.Int64Range(0, 2_000).Draw(t, "advance")
				cmd = Command{Op: OpTick}
			}
			cmd.Mono = now * int64(time.Millisecond)
			before := s.Snapshot()
			res, _ := s.Apply(Entry{Index: index, Term: 1, Command: cmd})
			if res.Code == QuotaExceeded {
				twin := mustNew(t, DefaultConfig())
				if err := twin.Restore(before); err != nil {
					t.Fatal(err)
				}
				twin.Apply(Entry{Index: index, Term: 1, Command: Command{Op: OpTick, Mono: cmd.Mono}})
				// Before its quota is checked an acquire settles its resources
				// (drops waiters whose deadline passed, grants those behind),
				// which a tick leaves for later.
				for _, name := range append([]string{cmd.Resource}, cmd.Resources...) {
					if r := twin.resources.find(name); r != nil {
						twin.settle(index, r)
					}
				}
				if !bytes.Equal(twin.Snapshot(), s.Snapshot()) {
					t.Fatalf("step %d: refused %v changed the state", i, cmd.Op)
				}
			}
			if s.usage == nil {
				if !q.IsZero() && res.Code == OK && cmd.Op == OpAcquire {
					t.Fatalf("step %d: an acquire with a quota did not start counting", i)
				}
				continue
			}
			want := s.recount()
			if !maps.Equal(s.usage, want) {
				t.Fatalf("step %d: counts %v, recount %v", i, s.usage, want)
			}
			for k, u := range want {
				limitHeld, limitQueued := q.Held, q.Queued
				if k.client != "" {
					limitHeld, limitQueued = q.ClientHeld, q.ClientQueued
				}
				if (limitHeld > 0 && u.held+u.queued > limitHeld) || (limitQueued > 0 && u.queued > limitQueued) {
					t.Fatalf("step %d: %+v has %+v past quota %+v", i, k, u, q)
				}
			}
		}
		restored := mustNew(t, DefaultConfig())
		if err := restored.Restore(s.Snapshot()); err != nil {
			t.Fatal(err)
		}
		if restored.usage != nil {
			t.Fatal("a restored state counts before any quota")
		}
		if !maps.Equal(restored.counted(), s.counted()) {
			t.Fatalf("restored counts %v, want %v", restored.usage, s.usage)
		}
	})
}
