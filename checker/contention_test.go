package checker

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/models"
)

// contention simulates, in 1ms ticks, one exclusive lock with a FIFO wait
// queue hammered by many clients that mostly block in acquire, the way
// hotShard and thunderingHerd load the real server. Replies get lost now
// and then (recorded as unknown, the client moves to a fresh lane). With
// doubleGrantAt > 0, the first queued grant from then on is made while the
// holder is still live: the one violation a test expects to be found.
type contention struct {
	rng           *rand.Rand
	now           int64
	doubleGrantAt int64
	doubled       bool
	token         uint64
	holders       []*simHolder
	queue         []*simClient
	clients       []*simClient
	lanes         int
	ops           []Op
}

type simHolder struct {
	id      string
	token   uint64
	expires int64
	// certain holders never see an indefinite outcome: the double grant
	// must overlap a lease the checker knows to be live.
	certain bool
}

type simClient struct {
	name   string
	lane   int
	nextAt int64 // when the client issues its next call
	busy   bool  // a call is in flight
	// the call in flight
	in       models.LockInput
	call     int64
	decideAt int64
	deadline int64 // queued acquire: when the wait ends
	lease    *simHolder
}

const simLatencyMax = 3 * ms

func newContention(seed uint64, clients int, doubleGrantAt int64) *contention {
	c := &contention{rng: rand.New(rand.NewPCG(seed, 99)), doubleGrantAt: doubleGrantAt}
	for i := range clients {
		c.clients = append(c.clients, &simClient{name: fmt.Sprintf("c%d", i+1), lane: c.newLane(), nextAt: c.rng.Int64N(50 * ms)})
	}
	return c
}

func (c *contention) newLane() int {
	c.lanes++
	return c.lanes - 1
}

func (c *contention) latency() int64 { return (1 + c.rng.Int64N(simLatencyMax/ms)) * ms }

// run simulates duration and returns the recorded history. Clients stop
// issuing calls at duration; calls in flight then are finished.
func (c *contention) run(duration int64) *History {
	for c.now = 0; c.now < duration+10*sec; c.now += ms {
		c.tick(c.now < duration)
	}
	return &History{Scenario: "contention", Ops: c.ops}
}

func (c *contention) tick(issuing bool) {
	kept := c.holders[:0]
	for _, h := range c.holders {
		if h.expires > c.now {
			kept = append(kept, h)
		}
	}
	c.holders = kept
	c.serveQueue()
	var timedOut []*simClient
	c.queue = slices.DeleteFunc(c.queue, func(cl *simClient) bool {
		if cl.deadline <= c.now {
			timedOut = append(timedOut, cl)
		}
		return cl.deadline <= c.now
	})
	for _, cl := range timedOut {
		c.reply(cl, models.LockOutput{LogTimeNs: c.now}, c.now, false)
	}
	for _, cl := range c.clients {
		switch {
		case cl.busy && cl.decideAt == c.now:
			c.decide(cl)
		case !cl.busy && issuing && cl.nextAt <= c.now:
			c.issue(cl)
		}
	}
}

// issue starts the client's next call: release or renew a held lease
// whose hold time is up, else a status now and then, else an acquire.
func (c *contention) issue(cl *simClient) {
	in := models.LockInput{Resource: "r", ClientID: cl.name}
	switch {
	case cl.lease != nil && c.rng.IntN(3) == 0:
		in.Op, in.LeaseID, in.TTLNs = models.Renew, cl.lease.id, 800*ms
	case cl.lease != nil:
		in.Op, in.LeaseID = models.Release, cl.lease.id
	case c.rng.IntN(20) == 0:
		in.Op = models.Status
	default:
		in.Op, in.Mode, in.TTLNs, in.Wait = models.Acquire, models.Exclusive, (500+c.rng.Int64N(1000))*ms, c.rng.IntN(10) != 0
	}
	cl.busy, cl.in, cl.call, cl.decideAt = true, in, c.now, c.now+c.latency()
}

// decide is the server applying the client's request at log time now.
func (c *contention) decide(cl *simClient) {
	switch cl.in.Op {
	case models.Acquire:
		if len(c.holders) == 0 && len(c.queue) == 0 {
			c.grant(cl, c.rng.IntN(2) == 0)
			return
		}
		if !cl.in.Wait {
			c.reply(cl, models.LockOutput{LogTimeNs: c.now}, c.now, false)
			return
		}
		cl.deadline = c.now + (1+c.rng.Int64N(6))*sec
		c.queue = append(c.queue, cl)
	case models.Release, models.Renew:
		i := slices.IndexFunc(c.holders, func(h *simHolder) bool { return h.id == cl.in.LeaseID })
		if i < 0 {
			c.reply(cl, models.LockOutput{Code: models.CodeNotHolder, LogTimeNs: c.now}, c.now, cl.lease.certain)
			return
		}
		h := c.holders[i]
		out := models.LockOutput{LogTimeNs: c.now}
		if cl.in.Op == models.Release {
			c.holders = slices.Delete(c.holders, i, i+1)
		} else {
			h.expires = c.now + cl.in.TTLNs
			out.ExpiresAtNs = h.expires
		}
		c.reply(cl, out, c.now, h.certain)
		c.serveQueue()
	case models.Status:
		out := models.LockOutput{LogTimeNs: c.now}
		for _, h := range c.holders {
			out.Holders = append(out.Holders, models.HolderView{Fingerprint: api.LeaseFingerprint(h.id), Mode: models.Exclusive, Token: h.token, ExpiresAtNs: h.expires})
		}
		c.reply(cl, out, c.now, false)
	}
}

// serveQueue grants the first waiter once the lock is free, or (once,
// from doubleGrantAt) while a certain holder still has 100ms to live.
func (c *contention) serveQueue() {
	if len(c.queue) == 0 {
		return
	}
	free := len(c.holders) == 0
	double := !c.doubled && c.doubleGrantAt > 0 && c.now >= c.doubleGrantAt && len(c.holders) == 1 &&
		c.holders[0].certain && c.holders[0].expires > c.now+100*ms
	if !free && !double {
		return
	}
	c.doubled = c.doubled || double
	cl := c.queue[0]
	c.queue = c.queue[1:]
	c.grant(cl, double || c.rng.IntN(2) == 0)
}

// grant makes cl a holder; a certain one never sees a lost reply.
func (c *contention) grant(cl *simClient, certain bool) {
	c.token++
	h := &simHolder{id: fmt.Sprintf("L%d", c.token), token: c.token, expires: c.now + cl.in.TTLNs, certain: certain}
	c.holders = append(c.holders, h)
	out := models.LockOutput{Granted: true, LeaseID: h.id, Token: h.token, ExpiresAtNs: h.expires, LogTimeNs: c.now}
	if c.reply(cl, out, c.now, h.certain) {
		cl.lease = h
	}
}

// reply records the call's outcome, decided at log time decided; one in
// 10 is lost unless certain. It returns whether the client learned it.
func (c *contention) reply(cl *simClient, out models.LockOutput, decided int64, certain bool) bool {
	op := Op{ClientID: cl.lane, Input: cl.in, Output: out, Call: cl.call, Return: decided + c.latency()}
	lost := !certain && c.rng.IntN(10) == 0
	if lost {
		op.Output, op.Return = models.LockOutput{Unknown: true}, math.MaxInt64
		cl.lane = c.newLane()
	}
	c.ops = append(c.ops, op)
	cl.busy = false
	cl.nextAt = max(op.Return, c.now) + c.rng.Int64N(20*ms)
	if cl.in.Op == models.Release || cl.in.Op == models.Renew && (lost || out.Code != "") {
		cl.lease = nil // released, or no longer sure to hold it
	}
	if cl.lease != nil || cl.in.Op == models.Acquire && out.Granted && !lost {
		cl.nextAt += (5 + c.rng.Int64N(50)) * ms // hold before renewing or releasing
	}
	return !lost
}

// TestCheckContended: goal — a hotShard-like history (30 clients blocking on one key, lost replies) is judged within a bounded time, correct or not. Method: simulate a FIFO lock server; Check the clean run (must pass) and one with a single double grant (must fail on linearizability), each under a 10s Porcupine cap that would turn a blown-up search into Unknown, then render the failing report.
func TestCheckContended(t *testing.T) {
	cases := []struct {
		name          string
		doubleGrantAt int64
		want          Verdict
	}{
		{"correct", 0, Success},
		{"double grant", 2 * sec, Failure},
	}
	for _, tc := range cases {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%s/seed=%d", tc.name, seed), func(t *testing.T) {
				sim := newContention(seed, 30, tc.doubleGrantAt)
				h := sim.run(4 * sec)
				if sim.doubled != (tc.doubleGrantAt > 0) {
					t.Fatalf("double grant made: %v", sim.doubled)
				}
				waits, unknown := 0, 0
				for _, op := range h.Ops {
					if op.Input.Wait && op.Return-op.Call > sec {
						waits++
					}
					if op.Output.Unknown {
						unknown++
					}
				}
				if unknown < 3 || waits < 30 {
					t.Fatalf("history not contended enough: %d ops, %d waits over 1s, %d unknown", len(h.Ops), waits, unknown)
				}
				start := time.Now()
				res := Check(context.Background(), h, Options{LinearizabilityTimeout: 10 * time.Second})
				t.Logf("%d ops (%d waits over 1s, %d unknown): %s in %s", len(h.Ops), waits, unknown, res.Stats.Linearizability, time.Since(start))
				if res.Verdict != tc.want {
					t.Fatalf("verdict %s, want %s; violations %v, notes %v", res.Verdict, tc.want, res.Violations, res.Notes)
				}
				if tc.want == Success {
					return
				}
				if got := checksOf(t, res); !slices.Equal(got, []string{CheckLinearizability}) {
					t.Fatalf("checks %v, want [%s]: %v", got, CheckLinearizability, res.Violations)
				}
				dir := t.TempDir()
				if _, err := WriteReport(context.Background(), dir, h, res, ReportOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(dir, "history.html")); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestContendedAgreesWithReference: goal — on contended histories the fast model judges as the reference power-set model does. Method: small contended runs (few enough clients for the reference to finish), clean and with a double grant, checked by both models.
func TestContendedAgreesWithReference(t *testing.T) {
	reference := models.NewLockNondeterministic(models.LockOptions{TimeSlack: models.DefaultTimeSlack})
	ref := reference.ToModel()
	for seed := range uint64(6) {
		for _, doubleGrantAt := range []int64{0, 500 * ms} {
			t.Run(fmt.Sprintf("seed=%d/doubleGrantAt=%s", seed, fmtNs(doubleGrantAt)), func(t *testing.T) {
				sim := newContention(seed, 8, doubleGrantAt)
				ops := porcupineOps(sim.run(2 * sec).Ops)
				want := porcupine.CheckOperationsTimeout(ref, ops, 20*time.Second)
				got := porcupine.CheckOperationsTimeout(models.Lock, ops, 20*time.Second)
				if want == porcupine.Unknown || got != want {
					t.Fatalf("%d ops: fast model %v, reference %v", len(ops), got, want)
				}
				if sim.doubled != (got == porcupine.Illegal) {
					t.Fatalf("%d ops, double grant made %v: %v", len(ops), sim.doubled, got)
				}
			})
		}
	}
}
