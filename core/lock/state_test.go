package lock

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// step is one log entry of a table test and what it must answer.
type step struct {
	// term of the entry; 0 keeps the previous one (1 at the start).
	term uint64
	// at is the leader's monotonic reading in ms.
	at   int64
	cmd  Command
	want string
	// events, as described by describeEvent; nil means none.
	events []string
}

// lid makes a readable lease id: the label is its first byte.
func lid(label byte) LeaseID { return LeaseID{label} }

func acq(res string, label byte, mode Mode, ttlMs, waitMs int64) Command {
	return Command{
		Op: OpAcquire, Resource: res, ClientID: "client-" + string(label),
		LeaseID: lid(label), Mode: mode, TTLMs: ttlMs, WaitMs: waitMs,
	}
}

// as sets who sends an acquire and its request id, for retries.
func as(cmd Command, clientID, requestID string) Command {
	cmd.ClientID, cmd.RequestID = clientID, requestID
	return cmd
}

func throughput(cmd Command) Command {
	cmd.Policy = Throughput
	return cmd
}

func rel(res string, label byte) Command {
	return Command{Op: OpRelease, Resource: res, LeaseID: lid(label)}
}

func renew(res string, label byte, ttlMs int64) Command {
	return Command{Op: OpRenew, Resource: res, LeaseID: lid(label), TTLMs: ttlMs}
}

func cancel(res string, label byte) Command {
	return Command{Op: OpCancel, Resource: res, LeaseID: lid(label)}
}

func status(res string) Command { return Command{Op: OpStatus, Resource: res} }

// owned names the attempt (by its lease label) a cancel comes from.
func owned(cmd Command, attempt byte) Command {
	cmd.Owner = lid(attempt)
	return cmd
}

// gone marks a cancel whose caller left.
func gone(cmd Command) Command {
	cmd.CallerGone = true
	return cmd
}

// from sets the node process holding an acquire's caller.
func from(cmd Command, host string, incarnation uint64) Command {
	cmd.Host, cmd.Incarnation = host, incarnation
	return cmd
}

func hello(host string, incarnation uint64) Command {
	return Command{Op: OpHello, Host: host, Incarnation: incarnation}
}

func orphan(res string, label byte) Command {
	return Command{Op: OpOrphan, Resource: res, LeaseID: lid(label)}
}

// suspecting stamps the leader's suspect list on an entry.
func suspecting(cmd Command, hosts ...string) Command {
	cmd.Suspects = hosts
	return cmd
}

func tick() Command { return Command{Op: OpTick} }

func label(id LeaseID) string {
	if id[0] >= 'a' && id[0] <= 'z' && id == lid(id[0]) {
		return string(id[0])
	}
	return id.String()
}

// leaseText is "label#token@expiry-ms", or only the label before a grant.
func leaseText(l Lease) string {
	if l.Token == 0 {
		return label(l.ID)
	}
	text := fmt.Sprintf("%s#%d@%d", label(l.ID), l.Token, l.ExpiresAt/int64(time.Millisecond))
	if l.GraceUntil != 0 {
		// In its grace window, until then.
		text += fmt.Sprintf("~%d", l.GraceUntil/int64(time.Millisecond))
	}
	return text
}

func describeResult(op Op, r Result) string {
	switch {
	case r.Code != OK:
		return r.Code.String()
	case r.Granted:
		return "granted " + leaseText(r.Lease)
	case r.Queued:
		return fmt.Sprintf("queued %s pos=%d", label(r.Lease.ID), r.Position)
	}
	switch op {
	case OpAcquire:
		return "denied"
	case OpRelease:
		return "released " + leaseText(r.Lease)
	case OpRenew:
		return "renewed " + leaseText(r.Lease)
	case OpOrphan:
		return "released " + leaseText(r.Lease)
	case OpCancel:
		if r.Position > 0 {
			return fmt.Sprintf("cancelled pos=%d", r.Position)
		}
		return "absent"
	case OpStatus:
		return describeStatus(*r.Status)
	case OpTick:
		return fmt.Sprintf("t=%d", r.LogTime/int64(time.Millisecond))
	case OpHello:
		return "ok"
	}
	return "?"
}

func describeStatus(st Status) string {
	var holders, queue []string
	for _, h := range st.Holders {
		holders = append(holders, leaseText(h))
	}
	for _, w := range st.Queue {
		queue = append(queue, label(w.ID))
	}
	return fmt.Sprintf("holders=[%s] queue=[%s]", strings.Join(holders, " "), strings.Join(queue, " "))
}

func describeEvent(e Event) string {
	kind := e.Kind.String()
	if e.Queued {
		kind += "*"
	}
	if e.Kind == EventFreed {
		return kind + " " + e.Resource
	}
	return kind + " " + e.Resource + " " + leaseText(e.Lease)
}

func describeEvents(events []Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, describeEvent(e))
	}
	return out
}

// fataler is what test helpers need from testing.TB and *rapid.T alike.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func mustNew(t fataler, cfg Config) *State {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// runSteps applies steps to a fresh State and checks every answer and event,
// and that the state survives a snapshot round trip after each step.
func runSteps(t *testing.T, cfg Config, steps []step) {
	t.Helper()
	s := mustNew(t, cfg)
	term := uint64(1)
	for i, st := range steps {
		if st.term != 0 {
			term = st.term
		}
		cmd := st.cmd
		cmd.Mono = st.at * int64(time.Millisecond)
		res, events := s.Apply(Entry{Index: uint64(i + 1), Term: term, Command: cmd})
		if got := describeResult(cmd.Op, res); got != st.want {
			t.Errorf("step %d (%v at %d): result %q, want %q", i, cmd.Op, st.at, got, st.want)
		}
		if got := describeEvents(events); !slices.Equal(got, st.events) {
			t.Errorf("step %d (%v at %d): events\n got  %q\n want %q", i, cmd.Op, st.at, got, st.events)
		}
		checkSnapshotRoundTrip(t, s)
	}
}

// checkSnapshotRoundTrip restores s's snapshot into a fresh State and
// requires the same bytes back.
func checkSnapshotRoundTrip(t fataler, s *State) {
	t.Helper()
	snap := s.Snapshot()
	fresh := mustNew(t, s.Config())
	if err := fresh.Restore(snap); err != nil {
		t.Fatalf("restore own snapshot: %v", err)
	}
	if again := fresh.Snapshot(); !bytes.Equal(snap, again) {
		t.Fatalf("snapshot not canonical after restore:\n %x\n %x", snap, again)
	}
	if fresh.Digest() != s.Digest() {
		t.Fatalf("digest differs after restore: %x vs %x", fresh.Digest(), s.Digest())
	}
}

const (
	X = Exclusive
	S = Shared
)

// TestApply runs scripted command sequences and compares every result and
// event against the documented semantics.
func TestApply(t *testing.T) {
	small := DefaultConfig()
	small.MaxWaitersPerQueue = 2
	few := DefaultConfig()
	few.MaxResources = 2

	cases := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{name: "try-lock grant and deny", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 10, cmd: acq("r", 'b', X, 100, 0), want: "denied"},
			{at: 20, cmd: acq("r", 'c', S, 100, 0), want: "denied"},
			{at: 30, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "freed r"}},
			{at: 40, cmd: acq("r", 'b', X, 100, 0), want: "granted b#2@140", events: []string{"grant r b#2@140"}},
		}},
		{name: "shared holders exclude exclusive", steps: []step{
			{at: 0, cmd: acq("r", 'a', S, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 0, cmd: acq("r", 'b', S, 100, 0), want: "granted b#2@100", events: []string{"grant r b#2@100"}},
			{at: 5, cmd: acq("r", 'c', X, 100, 0), want: "denied"},
			{at: 5, cmd: status("r"), want: "holders=[a#1@100 b#2@100] queue=[]"},
			{at: 10, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100"}},
			{at: 10, cmd: acq("r", 'c', X, 100, 0), want: "denied"},
			{at: 10, cmd: rel("r", 'b'), want: "released b#2@100", events: []string{"release r b#2@100", "freed r"}},
			{at: 10, cmd: acq("r", 'c', X, 100, 0), want: "granted c#3@110", events: []string{"grant r c#3@110"}},
			{at: 20, cmd: acq("r", 'd', S, 100, 0), want: "denied"},
		}},
		{name: "release grants the shared batch at the queue head", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: acq("r", 'b', S, 100, 500), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 2, cmd: acq("r", 'c', S, 100, 500), want: "queued c pos=2", events: []string{"enqueue r c"}},
			{at: 3, cmd: acq("r", 'd', X, 100, 500), want: "queued d pos=3", events: []string{"enqueue r d"}},
			{at: 4, cmd: acq("r", 'e', S, 100, 500), want: "queued e pos=4", events: []string{"enqueue r e"}},
			{at: 10, cmd: rel("r", 'a'), want: "released a#1@100",
				events: []string{"release r a#1@100", "grant* r b#2@110", "grant* r c#3@110"}},
			{at: 20, cmd: rel("r", 'b'), want: "released b#2@110", events: []string{"release r b#2@110"}},
			{at: 30, cmd: rel("r", 'c'), want: "released c#3@110", events: []string{"release r c#3@110", "grant* r d#4@130"}},
			{at: 40, cmd: rel("r", 'd'), want: "released d#4@130", events: []string{"release r d#4@130", "grant* r e#5@140"}},
			{at: 50, cmd: rel("r", 'e'), want: "released e#5@140", events: []string{"release r e#5@140", "freed r"}},
		}},
		{name: "queued exclusive blocks later shared requests", steps: []step{
			{at: 0, cmd: acq("r", 'a', S, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: acq("r", 'b', X, 100, 500), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 2, cmd: acq("r", 'c', S, 100, 0), want: "denied"},
			{at: 3, cmd: acq("r", 'c', S, 100, 500), want: "queued c pos=2", events: []string{"enqueue r c"}},
			{at: 4, cmd: status("r"), want: "holders=[a#1@100] queue=[b c]"},
			{at: 10, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "grant* r b#2@110"}},
			{at: 20, cmd: rel("r", 'b'), want: "released b#2@110", events: []string{"release r b#2@110", "grant* r c#3@120"}},
		}},
		{name: "grants follow enqueue order", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: acq("r", 'c', X, 100, 500), want: "queued c pos=1", events: []string{"enqueue r c"}},
			{at: 2, cmd: acq("r", 'b', X, 100, 500), want: "queued b pos=2", events: []string{"enqueue r b"}},
			{at: 3, cmd: acq("r", 'd', X, 100, 500), want: "queued d pos=3", events: []string{"enqueue r d"}},
			{at: 10, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "grant* r c#2@110"}},
			{at: 20, cmd: rel("r", 'c'), want: "released c#2@110", events: []string{"release r c#2@110", "grant* r b#3@120"}},
			{at: 30, cmd: rel("r", 'b'), want: "released b#3@120", events: []string{"release r b#3@120", "grant* r d#4@130"}},
		}},
		{name: "cancel removes a waiter", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: acq("r", 'b', X, 100, 500), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 2, cmd: acq("r", 'c', X, 100, 500), want: "queued c pos=2", events: []string{"enqueue r c"}},
			{at: 5, cmd: cancel("r", 'b'), want: "cancelled pos=1", events: []string{"cancel r b"}},
			{at: 6, cmd: cancel("r", 'b'), want: "absent"},
			{at: 7, cmd: cancel("nowhere", 'c'), want: "absent"},
			{at: 10, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "grant* r c#2@110"}},
		}},
		{name: "cancel of the head exclusive admits the shared waiters behind it", steps: []step{
			{at: 0, cmd: acq("r", 'a', S, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: acq("r", 'b', X, 100, 500), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 2, cmd: acq("r", 'c', S, 100, 500), want: "queued c pos=2", events: []string{"enqueue r c"}},
			{at: 3, cmd: acq("r", 'd', S, 100, 500), want: "queued d pos=3", events: []string{"enqueue r d"}},
			{at: 4, cmd: acq("r", 'e', X, 100, 500), want: "queued e pos=4", events: []string{"enqueue r e"}},
			{at: 5, cmd: cancel("r", 'b'), want: "cancelled pos=1",
				events: []string{"cancel r b", "grant* r c#2@105", "grant* r d#3@105"}},
			{at: 6, cmd: status("r"), want: "holders=[a#1@100 c#2@105 d#3@105] queue=[e]"},
		}},
		{name: "cancel after the grant reports the grant", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: acq("r", 'b', X, 100, 500), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 10, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "grant* r b#2@110"}},
			{at: 20, cmd: cancel("r", 'b'), want: "granted b#2@110"},
			{at: 30, cmd: status("r"), want: "holders=[b#2@110] queue=[]"},
		}},
		{name: "waiter is dropped once its deadline is reached", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 0, cmd: acq("r", 'b', X, 100, 50), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 1, cmd: acq("r", 'c', X, 100, 500), want: "queued c pos=2", events: []string{"enqueue r c"}},
			{at: 49, cmd: status("r"), want: "holders=[a#1@100] queue=[b c]"},
			{at: 50, cmd: status("r"), want: "holders=[a#1@100] queue=[c]"},
			{at: 50, cmd: rel("r", 'a'), want: "released a#1@100",
				events: []string{"release r a#1@100", "cancel r b", "grant* r c#2@150"}},
			{at: 60, cmd: cancel("r", 'b'), want: "absent"},
		}},
		{name: "waiter granted just before its deadline", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 0, cmd: acq("r", 'b', X, 100, 50), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 49, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "grant* r b#2@149"}},
		}},
		{name: "lease expires exactly at ExpiresAt and hands over to the queue", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 10, cmd: acq("r", 'b', X, 50, 500), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 99, cmd: tick(), want: "t=99"},
			{at: 100, cmd: tick(), want: "t=100", events: []string{"expire r a#1@100", "grant* r b#2@150"}},
			{at: 100, cmd: rel("r", 'a'), want: "not_holder"},
			// Expiry runs before the command, so b is gone when its release applies.
			{at: 150, cmd: rel("r", 'b'), want: "not_holder", events: []string{"expire r b#2@150", "freed r"}},
		}},
		{name: "renew extends the lease", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 90, cmd: renew("r", 'a', 0), want: "renewed a#1@190", events: []string{"renew r a#1@190"}},
			{at: 150, cmd: tick(), want: "t=150"},
			{at: 160, cmd: renew("r", 'a', 200), want: "renewed a#1@360", events: []string{"renew r a#1@360"}},
			{at: 359, cmd: tick(), want: "t=359"},
			{at: 360, cmd: tick(), want: "t=360", events: []string{"expire r a#1@360", "freed r"}},
		}},
		{name: "renew after expiry is NotHolder and does not resurrect", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 100, cmd: renew("r", 'a', 0), want: "not_holder", events: []string{"expire r a#1@100", "freed r"}},
			{at: 101, cmd: status("r"), want: "holders=[] queue=[]"},
			{at: 102, cmd: acq("r", 'b', X, 100, 0), want: "granted b#2@202", events: []string{"grant r b#2@202"}},
			{at: 103, cmd: renew("r", 'a', 100), want: "not_holder"},
			{at: 104, cmd: status("r"), want: "holders=[b#2@202] queue=[]"},
		}},
		{name: "release or renew by the wrong lease is NotHolder", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: rel("r", 'z'), want: "not_holder"},
			{at: 2, cmd: rel("other", 'a'), want: "not_holder"},
			{at: 3, cmd: renew("r", 'z', 0), want: "not_holder"},
			{at: 4, cmd: acq("r", 'b', X, 100, 500), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 5, cmd: rel("r", 'b'), want: "not_holder"},
			{at: 6, cmd: status("r"), want: "holders=[a#1@100] queue=[b]"},
		}},
		{name: "retried acquire returns the same lease and no second token", steps: []step{
			{at: 0, cmd: as(acq("r", 'a', X, 100, 0), "cl", "q1"), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 5, cmd: as(acq("r", 'b', X, 100, 0), "cl", "q1"), want: "granted a#1@100"},
			{at: 6, cmd: status("r"), want: "holders=[a#1@100] queue=[]"},
			{at: 7, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "freed r"}},
			// The ended grant is reported as ended; no new grant is made.
			{at: 8, cmd: as(acq("r", 'b', X, 100, 0), "cl", "q1"), want: "lease_ended"},
			{at: 9, cmd: acq("r", 'c', X, 100, 0), want: "granted c#2@109", events: []string{"grant r c#2@109"}},
			{at: 10, cmd: as(acq("r", 'd', X, 100, 0), "other", "q1"), want: "denied"},
		}},
		{name: "retried queued acquire reports the queue, then the grant", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: as(acq("r", 'b', X, 100, 500), "cl", "q"), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 2, cmd: as(acq("r", 'c', X, 100, 500), "cl", "q"), want: "queued b pos=1", events: []string{"join r b"}},
			{at: 10, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "grant* r b#2@110"}},
			{at: 11, cmd: as(acq("r", 'c', X, 100, 500), "cl", "q"), want: "granted b#2@110"},
		}},
		{name: "a request id reused for another request is refused and changes nothing", steps: []step{
			{at: 0, cmd: as(acq("x1", 'a', X, 100, 0), "wx", "same"), want: "granted a#1@100", events: []string{"grant x1 a#1@100"}},
			{at: 1, cmd: as(acq("y1", 'b', X, 100, 0), "wx", "same"), want: "request_id_reused"},
			{at: 2, cmd: as(acq("x1", 'b', S, 100, 0), "wx", "same"), want: "request_id_reused"},
			{at: 3, cmd: as(acq("x1", 'b', X, 99, 0), "wx", "same"), want: "request_id_reused"},
			{at: 4, cmd: as(throughput(acq("x1", 'b', X, 100, 0)), "wx", "same"), want: "request_id_reused"},
			{at: 5, cmd: status("y1"), want: "holders=[] queue=[]"},
			// The wait may differ: a retry sends what is left of it.
			{at: 6, cmd: as(acq("x1", 'b', X, 100, 50), "wx", "same"), want: "granted a#1@100"},
		}},
		{name: "a retry of a request whose grant expired says the lease ended", steps: []step{
			{at: 0, cmd: as(acq("r", 'a', X, 100, 0), "cl", "fixed"), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 150, cmd: as(acq("r", 'b', X, 100, 0), "cl", "fixed"), want: "lease_ended", events: []string{"expire r a#1@100", "freed r"}},
			{at: 151, cmd: status("r"), want: "holders=[] queue=[]"},
		}},
		{name: "a retry joins the queued wait; the shorter attempt's cancel leaves it queued", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: as(acq("r", 'b', X, 100, 60), "cl", "q"), want: "queued b pos=1", events: []string{"enqueue r b"}},
			// A retry 10 ms later asks for 20 ms more: the original waits longer.
			{at: 11, cmd: as(acq("r", 'c', X, 100, 20), "cl", "q"), want: "queued b pos=1"},
			{at: 31, cmd: owned(cancel("r", 'b'), 'c'), want: "queued b pos=1"},
			{at: 40, cmd: status("r"), want: "holders=[a#1@100] queue=[b]"},
			{at: 61, cmd: owned(cancel("r", 'b'), 'b'), want: "cancelled pos=1", events: []string{"cancel r b"}},
		}},
		{name: "a retry with a longer wait keeps the request queued past the first deadline", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 200, 0), want: "granted a#1@200", events: []string{"grant r a#1@200"}},
			{at: 1, cmd: as(acq("r", 'b', X, 100, 30), "cl", "q"), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 10, cmd: as(acq("r", 'c', X, 100, 100), "cl", "q"), want: "queued b pos=1", events: []string{"join r b"}},
			// The original's wait ends first: its cancel no longer removes it.
			{at: 31, cmd: owned(cancel("r", 'b'), 'b'), want: "queued b pos=1"},
			{at: 50, cmd: rel("r", 'a'), want: "released a#1@200", events: []string{"release r a#1@200", "grant* r b#2@150"}},
			{at: 51, cmd: as(acq("r", 'c', X, 100, 100), "cl", "q"), want: "granted b#2@150"},
		}},
		{name: "a hello cancels the queued requests of the node's earlier processes", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: from(acq("r", 'b', X, 100, 500), "n2", 1), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 2, cmd: from(acq("r", 'c', X, 100, 500), "n3", 1), want: "queued c pos=2", events: []string{"enqueue r c"}},
			{at: 3, cmd: from(acq("r", 'd', X, 100, 500), "n2", 2), want: "queued d pos=3", events: []string{"enqueue r d"}},
			{at: 4, cmd: hello("n2", 2), want: "ok", events: []string{"cancel r b"}},
			{at: 5, cmd: status("r"), want: "holders=[a#1@100] queue=[c d]"},
			{at: 6, cmd: hello("n4", 1), want: "ok"},
		}},
		{name: "a suspected node's waiter is cancelled instead of granted", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: from(acq("r", 'b', X, 100, 500), "n2", 1), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 2, cmd: from(acq("r", 'c', X, 100, 500), "n3", 1), want: "queued c pos=2", events: []string{"enqueue r c"}},
			{at: 10, cmd: suspecting(rel("r", 'a'), "n2"), want: "released a#1@100",
				events: []string{"release r a#1@100", "cancel r b", "grant* r c#2@110"}},
		}},
		{name: "an orphaned queued grant is released unless claimed", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: from(as(acq("r", 'b', X, 1000, 500), "w1", "q"), "n2", 1), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 2, cmd: from(acq("r", 'c', X, 1000, 500), "n3", 1), want: "queued c pos=2", events: []string{"enqueue r c"}},
			{at: 10, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "grant* r b#2@1010"}},
			{at: 11, cmd: from(orphan("r", 'b'), "n2", 2), want: "released b#2@1010", events: []string{"release r b#2@1010", "grant* r c#3@1011"}},
			// n2's restarted process gives up its earlier process's attempts: b's grant
			// is released. d's is claimed first (a renew): no orphan release then.
			{at: 12, cmd: from(acq("r", 'd', X, 1000, 500), "n2", 1), want: "queued d pos=1", events: []string{"enqueue r d"}},
			{at: 13, cmd: rel("r", 'c'), want: "released c#3@1011", events: []string{"release r c#3@1011", "grant* r d#4@1013"}},
			{at: 14, cmd: renew("r", 'd', 0), want: "renewed d#4@1014", events: []string{"renew r d#4@1014"}},
			{at: 15, cmd: from(orphan("r", 'd'), "n2", 2), want: "not_holder"},
			{at: 16, cmd: from(orphan("r", 'z'), "n2", 2), want: "not_holder"},
		}},
		{name: "a grant is an orphan only once every attempt that waited for it gave it up", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: as(acq("r", 'b', X, 1000, 100), "w1", "q"), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 2, cmd: as(acq("r", 'c', X, 1000, 50), "w1", "q"), want: "queued b pos=1"},
			{at: 10, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "grant* r b#2@1010"}},
			{at: 11, cmd: owned(orphan("r", 'b'), 'b'), want: "not_holder"},
			{at: 12, cmd: owned(orphan("r", 'b'), 'b'), want: "not_holder"},
			{at: 13, cmd: owned(orphan("r", 'b'), 'c'), want: "released b#2@1010", events: []string{"release r b#2@1010", "freed r"}},
		}},
		{name: "a cancel whose caller left releases the grant it finds; one whose caller stays claims it", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: acq("r", 'b', X, 1000, 500), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 2, cmd: acq("r", 'c', X, 1000, 500), want: "queued c pos=2", events: []string{"enqueue r c"}},
			{at: 10, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "grant* r b#2@1010"}},
			// b's caller left: another attempt's orphan release is refused, its own goes through.
			{at: 11, cmd: gone(owned(cancel("r", 'b'), 'z')), want: "granted b#2@1010"},
			{at: 12, cmd: gone(owned(cancel("r", 'b'), 'b')), want: "absent", events: []string{"release r b#2@1010", "grant* r c#3@1012"}},
			// c's caller is told by its cancel: claimed, so no orphan release later.
			{at: 13, cmd: owned(cancel("r", 'c'), 'c'), want: "granted c#3@1012"},
			{at: 14, cmd: owned(orphan("r", 'c'), 'c'), want: "not_holder"},
		}},
		{name: "a retry answered with a queued grant claims it", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: as(acq("r", 'b', X, 1000, 500), "w1", "q"), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 10, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "grant* r b#2@1010"}},
			{at: 11, cmd: as(acq("r", 'c', X, 1000, 400), "w1", "q"), want: "granted b#2@1010"},
			{at: 12, cmd: from(orphan("r", 'b'), "n2", 2), want: "not_holder"},
		}},
		{name: "dedupe keeps client and request ids apart", steps: []step{
			{at: 0, cmd: as(acq("r1", 'a', X, 100, 0), "a\x00b", "c"), want: "granted a#1@100", events: []string{"grant r1 a#1@100"}},
			{at: 1, cmd: as(acq("r2", 'b', X, 100, 0), "a", "b\x00c"), want: "granted b#2@101", events: []string{"grant r2 b#2@101"}},
		}},
		{name: "a new term sets the baseline so the leader gap is not counted", steps: []step{
			{term: 1, at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 60, cmd: tick(), want: "t=60"},
			{term: 2, at: 5000, cmd: tick(), want: "t=60"},
			{at: 5039, cmd: tick(), want: "t=99"},
			{at: 5040, cmd: tick(), want: "t=100", events: []string{"expire r a#1@100", "freed r"}},
			{term: 3, at: 7, cmd: tick(), want: "t=100"},
			{at: 8, cmd: tick(), want: "t=101"},
		}},
		{name: "mono going backwards within a term does not move time back", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 80, cmd: tick(), want: "t=80"},
			{at: 10, cmd: tick(), want: "t=80"},
			{at: 90, cmd: tick(), want: "t=90"},
			{at: 100, cmd: tick(), want: "t=100", events: []string{"expire r a#1@100", "freed r"}},
		}},
		{name: "queue full", cfg: small, steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: acq("r", 'b', X, 100, 500), want: "queued b pos=1", events: []string{"enqueue r b"}},
			{at: 2, cmd: acq("r", 'c', X, 100, 500), want: "queued c pos=2", events: []string{"enqueue r c"}},
			{at: 3, cmd: acq("r", 'd', X, 100, 500), want: "queue_full"},
			{at: 4, cmd: acq("r", 'd', X, 100, 0), want: "denied"},
			{at: 5, cmd: cancel("r", 'b'), want: "cancelled pos=1", events: []string{"cancel r b"}},
			{at: 6, cmd: acq("r", 'd', X, 100, 500), want: "queued d pos=2", events: []string{"enqueue r d"}},
		}},
		{name: "too many locks", cfg: few, steps: []step{
			{at: 0, cmd: acq("r1", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r1 a#1@100"}},
			{at: 1, cmd: acq("r2", 'b', X, 100, 0), want: "granted b#2@101", events: []string{"grant r2 b#2@101"}},
			{at: 2, cmd: acq("r3", 'c', X, 100, 0), want: "too_many_locks"},
			{at: 3, cmd: acq("r1", 'd', X, 100, 500), want: "queued d pos=1", events: []string{"enqueue r1 d"}},
			{at: 4, cmd: cancel("r1", 'd'), want: "cancelled pos=1", events: []string{"cancel r1 d"}},
			{at: 5, cmd: rel("r1", 'a'), want: "released a#1@100", events: []string{"release r1 a#1@100", "freed r1"}},
			{at: 6, cmd: acq("r3", 'c', X, 100, 0), want: "granted c#3@106", events: []string{"grant r3 c#3@106"}},
		}},
		{name: "throughput policy never queues and announces the free lock", steps: []step{
			{at: 0, cmd: acq("r", 'a', X, 100, 0), want: "granted a#1@100", events: []string{"grant r a#1@100"}},
			{at: 1, cmd: throughput(acq("r", 'b', X, 100, 500)), want: "denied"},
			{at: 2, cmd: status("r"), want: "holders=[a#1@100] queue=[]"},
			{at: 10, cmd: rel("r", 'a'), want: "released a#1@100", events: []string{"release r a#1@100", "freed r"}},
			{at: 11, cmd: throughput(acq("r", 'b', X, 100, 500)), want: "granted b#2@111", events: []string{"grant r b#2@111"}},
			{at: 12, cmd: acq("r", 'c', X, 100, 500), want: "queued c pos=1", events: []string{"enqueue r c"}},
			{at: 13, cmd: throughput(acq("r", 'd', S, 100, 500)), want: "denied"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg == (Config{}) {
				cfg = DefaultConfig()
			}
			runSteps(t, cfg, tc.steps)
		})
	}
}

// TestApplyInvalid applies malformed commands and requires Code Invalid and
// exactly the effect of a tick at the same log position: same events (due
// expiries still happen) and byte-identical snapshots.
func TestApplyInvalid(t *testing.T) {
	cfg := DefaultConfig()
	long := strings.Repeat("r", cfg.MaxIDLen+1)
	// 2^58 ms is 2^64 * 15625 ns: the product wraps to 0 in int64 nanoseconds.
	const wrapsMs = int64(1) << 58
	maxTTLMs := cfg.MaxTTL.Milliseconds()
	maxWaitMs := cfg.MaxWait.Milliseconds()
	cases := []struct {
		name string
		cmd  Command
	}{
		{"empty resource", acq("", 'n', X, 100, 0)},
		{"257-byte resource", acq(long, 'n', X, 100, 0)},
		{"invalid UTF-8 resource", acq("r\xff", 'n', X, 100, 0)},
		{"empty client", as(acq("r", 'n', X, 100, 0), "", "")},
		{"257-byte client", as(acq("r", 'n', X, 100, 0), long, "")},
		{"invalid UTF-8 request id", as(acq("r", 'n', X, 100, 0), "cl", "\xc3")},
		{"ttl 0", acq("r", 'n', X, 0, 0)},
		{"negative ttl", acq("r", 'n', X, -1, 0)},
		{"ttl above max", acq("r", 'n', X, maxTTLMs+1, 0)},
		{"ttl wrapping nanoseconds", acq("r", 'n', X, wrapsMs+1000, 0)},
		{"negative wait", acq("r", 'n', X, 100, -1)},
		{"wait above max", acq("r", 'n', X, 100, maxWaitMs+1)},
		{"wait wrapping nanoseconds", acq("r", 'n', X, 100, wrapsMs+1000)},
		{"mode 0", acq("r", 'n', 0, 100, 0)},
		{"mode 3", acq("r", 'n', 3, 100, 0)},
		{"bad policy", func() Command { c := acq("r", 'n', X, 100, 0); c.Policy = 2; return c }()},
		{"zero lease id on acquire", func() Command { c := acq("r", 'n', X, 100, 0); c.LeaseID = LeaseID{}; return c }()},
		{"zero lease id on release", Command{Op: OpRelease, Resource: "r"}},
		{"zero lease id on renew", Command{Op: OpRenew, Resource: "r"}},
		{"zero lease id on cancel", Command{Op: OpCancel, Resource: "r"}},
		{"empty resource on release", rel("", 'a')},
		{"renew ttl above max", renew("r", 'a', maxTTLMs+1)},
		{"renew negative ttl", renew("r", 'a', -5)},
		{"renew ttl wrapping nanoseconds", renew("r", 'a', wrapsMs+1000)},
		{"status without resource", status("")},
		{"op 0", Command{Op: 0, Resource: "r"}},
		{"op 99", Command{Op: 99, Resource: "r"}},
	}
	// The base state has a holder due at 100 ms, another holder and a queue.
	base := []Command{
		acq("r", 'a', X, 300, 0),
		acq("r", 'b', X, 300, 500),
		acq("s", 'c', S, 100, 0),
		as(acq("s", 'd', S, 300, 0), "cl", "q"),
	}
	build := func() *State {
		s := mustNew(t, cfg)
		for i, c := range base {
			if res, _ := s.Apply(Entry{Index: uint64(i + 1), Term: 1, Command: c}); res.Code != OK {
				t.Fatalf("base command %d: %v", i, res.Code)
			}
		}
		return s
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := cfg.Check(&tc.cmd); !errors.Is(err, ErrInvalid) {
				t.Errorf("Check = %v, want ErrInvalid", err)
			}
			bad, ref := build(), build()
			e := Entry{Index: uint64(len(base) + 1), Term: 1}
			e.Command = tc.cmd
			e.Command.Mono = 100 * int64(time.Millisecond)
			res, events := bad.Apply(e)
			gotEvents := describeEvents(events)
			e.Command = Command{Op: OpTick, Mono: e.Command.Mono}
			_, refEvents := ref.Apply(e)
			if res.Code != Invalid {
				t.Errorf("code %v, want %v", res.Code, Invalid)
			}
			if res.Granted || res.Queued || res.Status != nil {
				t.Errorf("invalid command answered %+v", res)
			}
			if want := describeEvents(refEvents); !slices.Equal(gotEvents, want) {
				t.Errorf("events %q, want those of a tick %q", gotEvents, want)
			}
			if !bytes.Equal(bad.Snapshot(), ref.Snapshot()) {
				t.Errorf("state differs from a tick at the same position")
			}
		})
	}
}

// TestCheckBoundaries requires the largest and smallest legal values to pass
// Check, so the invalid cases above fail for the reason they name.
func TestCheckBoundaries(t *testing.T) {
	cfg := DefaultConfig()
	edge := strings.Repeat("é", cfg.MaxIDLen/2) // 256 bytes, multi-byte runes
	cases := []struct {
		name string
		cmd  Command
	}{
		{"256-byte ids", as(acq(edge, 'a', X, 100, 0), edge, edge)},
		{"ttl at min and wait 0", acq("r", 'a', S, cfg.MinTTL.Milliseconds(), 0)},
		{"ttl and wait at max", acq("r", 'a', X, cfg.MaxTTL.Milliseconds(), cfg.MaxWait.Milliseconds())},
		{"throughput", throughput(acq("r", 'a', X, 100, 0))},
		{"renew keeping ttl", renew("r", 'a', 0)},
		{"renew at max", renew("r", 'a', cfg.MaxTTL.Milliseconds())},
		{"release", rel("r", 'a')},
		{"cancel", cancel("r", 'a')},
		{"status", status("r")},
		{"tick without resource", tick()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := cfg.Check(&tc.cmd); err != nil {
				t.Errorf("Check = %v, want nil", err)
			}
		})
	}
}

// TestMetricsCount checks the counters against a small scripted history.
func TestMetricsCount(t *testing.T) {
	s := mustNew(t, DefaultConfig())
	script := []Command{
		as(acq("r", 'a', S, 100, 0), "c1", "q1"),
		as(acq("r", 'b', S, 100, 0), "c2", ""),
		acq("r", 'c', X, 100, 500),
		acq("t", 'd', X, 50, 0),
	}
	for i, c := range script {
		c.Mono = int64(i) * int64(time.Millisecond)
		s.Apply(Entry{Index: uint64(i + 1), Term: 1, Command: c})
	}
	s.Apply(Entry{Index: 10, Term: 1, Command: Command{Op: OpTick, Mono: 60 * int64(time.Millisecond)}})
	got := s.Metrics()
	want := Metrics{
		Resources: 1, Leases: 2, Waiters: 1, Clients: 3, DedupeEntries: 1,
		Expirations: 1, LastToken: 3, LastIndex: 10, LogTime: 60 * int64(time.Millisecond),
	}
	if got != want {
		t.Errorf("Metrics = %+v\nwant %+v", got, want)
	}
	if at, ok := s.NextExpiry(); !ok || at != 100*int64(time.Millisecond) {
		t.Errorf("NextExpiry = %d, %v; want 100ms", at, ok)
	}
}

// TestDigestTellsStatesApart: goal — Digest, which replicas are compared by,
// changes with every part of the state, the dedupe tables included (they
// are hashed incrementally). Method: one change per part from a common
// state; each must change the digest, and undoing nothing must not.
func TestDigestTellsStatesApart(t *testing.T) {
	build := func(steps ...Command) *State {
		s := mustNew(t, DefaultConfig())
		for i, c := range steps {
			c.Mono = int64(i) * int64(time.Millisecond)
			s.Apply(Entry{Index: uint64(i + 1), Term: 1, Command: c})
		}
		return s
	}
	// Every variant has as many entries at the same clock readings as the
	// reference, whose last entry is a status (it changes nothing).
	base := []Command{acq("r", 'a', X, 100, 0), as(acq("q", 'b', X, 100, 0), "cl", "req")}
	same := build(append(base, status("r"))...).Digest()
	if build(append(base, status("r"))...).Digest() != same {
		t.Fatal("equal states, different digests")
	}
	for name, extra := range map[string]Command{
		"a holder":       acq("s", 'c', X, 100, 0),
		"a dedupe entry": as(acq("t", 'd', X, 100, 0), "cl", "other"),
		"a waiter":       acq("r", 'e', X, 100, 50),
	} {
		if build(append(base, extra)...).Digest() == same {
			t.Errorf("adding %s left the digest unchanged", name)
		}
	}
}
