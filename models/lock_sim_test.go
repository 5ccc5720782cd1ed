package models

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// simLease is a lease held in the reference server.
type simLease struct {
	mode    string
	token   uint64
	expires int64
}

// refServer is a minimal correct lock state machine: it applies operations
// at their linearization point p, which doubles as the log time.
type refServer struct {
	token uint64
	next  int
	locks map[string]map[string]simLease
	// grantConflicts makes the server ignore holders: the injected bug.
	grantConflicts bool
}

func (s *refServer) live(resource string, now int64) map[string]simLease {
	if s.locks[resource] == nil {
		s.locks[resource] = make(map[string]simLease)
	}
	m := s.locks[resource]
	for id, l := range m {
		if l.expires <= now {
			delete(m, id)
		}
	}
	return m
}

func (s *refServer) apply(in LockInput, now int64) LockOutput {
	m := s.live(in.Resource, now)
	switch in.Op {
	case Acquire:
		mode := normalizeMode(in.Mode)
		for _, l := range m {
			if conflicts(l.mode, mode) && !s.grantConflicts {
				return LockOutput{LogTimeNs: now}
			}
		}
		s.token++
		s.next++
		id := fmt.Sprintf("L%d", s.next)
		m[id] = simLease{mode: mode, token: s.token, expires: now + in.TTLNs}
		return LockOutput{Granted: true, LeaseID: id, Token: s.token, ExpiresAtNs: now + in.TTLNs, LogTimeNs: now}
	case Release, Renew:
		l, ok := m[in.LeaseID]
		if !ok {
			return LockOutput{Code: CodeNotHolder, LogTimeNs: now}
		}
		if in.Op == Release {
			delete(m, in.LeaseID)
			return LockOutput{LogTimeNs: now}
		}
		l.expires = now + in.TTLNs
		m[in.LeaseID] = l
		return LockOutput{Token: l.token, ExpiresAtNs: l.expires, LogTimeNs: now}
	default:
		out := LockOutput{LogTimeNs: now}
		for id, l := range m {
			out.Holders = append(out.Holders, HolderView{Fingerprint: leaseKey(id), Mode: l.mode, Token: l.token, ExpiresAtNs: l.expires})
		}
		return out
	}
}

// simulateLocks produces a history of clients hammering two resources on a
// reference server as a recorder reading the HTTP API would log it:
// concurrent calls, indefinite outcomes (applied or not, some retried and
// answered from the dedupe table), grants reported late, and times rebuilt
// from whole milliseconds.
func simulateLocks(seed uint64, ops int, buggy bool) []porcupine.Operation {
	rng := rand.New(rand.NewPCG(seed, 7))
	const clients = 5
	type plan struct {
		client     int
		call, p, r int64
	}
	var plans []plan
	for c := range clients {
		t := int64(0)
		for range ops / clients {
			call := t + rng.Int64N(300*int64(time.Millisecond))
			p := call + rng.Int64N(100*int64(time.Millisecond))
			r := p + rng.Int64N(100*int64(time.Millisecond))
			plans = append(plans, plan{c, call, p, r})
			t = r
		}
	}
	slices.SortFunc(plans, func(a, b plan) int { return cmp.Compare(a.p, b.p) })
	srv := &refServer{locks: make(map[string]map[string]simLease), grantConflicts: buggy}
	held := make([][]LockInput, clients) // leases each client knows it holds
	lane := make([]int, clients)         // porcupine client id per client
	for c := range lane {
		lane[c] = c
	}
	nextLane := clients
	// retries holds, per client, an acquire whose outcome it never learned
	// and will retry with the same request id (the server replays it).
	type retry struct {
		in      LockInput
		granted LockOutput // the unseen first answer, if it granted
	}
	retries := make([]*retry, clients)
	var history []porcupine.Operation
	for _, pl := range plans {
		c := pl.client
		resource := []string{"a", "b"}[rng.IntN(2)]
		in := LockInput{Op: Status, Resource: resource}
		var out LockOutput
		reportAt := pl.p
		decided := false // out already set: a replayed retry
		switch k := rng.IntN(10); {
		case retries[c] != nil:
			rt := retries[c]
			retries[c] = nil
			in = rt.in
			if rt.granted.Granted {
				out, decided = rt.granted, true // the dedupe table answers
				if l, ok := srv.live(in.Resource, pl.p)[out.LeaseID]; ok {
					out.ExpiresAtNs = l.expires
				}
			}
		case k < 4:
			in = LockInput{Op: Acquire, Resource: resource, ClientID: fmt.Sprint(c),
				Mode: []string{Exclusive, Shared}[rng.IntN(2)], TTLNs: (1 + rng.Int64N(3)) * int64(time.Second)}
		case k < 8 && len(held[c]) > 0:
			i := rng.IntN(len(held[c]))
			in = held[c][i]
			in.Op, in.TTLNs = []OpKind{Release, Renew}[rng.IntN(2)], int64(time.Second)
			if in.Op == Release {
				held[c] = slices.Delete(held[c], i, i+1)
			}
		}
		unknownOutcome := !decided && rng.IntN(10) == 0
		if !decided && (!unknownOutcome || rng.IntN(2) == 0) {
			out = srv.apply(in, pl.p)
			if in.Op == Acquire && out.Granted && rng.IntN(5) == 0 {
				reportAt += rng.Int64N(pl.r - pl.p + 1) // a queued grant found late
			}
		}
		if in.Op == Acquire && unknownOutcome && rng.IntN(2) == 0 {
			retries[c] = &retry{in: in, granted: out}
		}
		if in.Op == Acquire && out.Granted && !unknownOutcome {
			held[c] = append(held[c], LockInput{Resource: in.Resource, LeaseID: out.LeaseID})
		}
		op := porcupine.Operation{ClientId: lane[c], Input: in, Call: pl.call, Output: viaHTTP(out, reportAt), Return: pl.r}
		if unknownOutcome {
			op.Output, op.Return = LockOutput{Unknown: true}, math.MaxInt64
			lane[c] = nextLane
			nextLane++
		}
		history = append(history, op)
	}
	return history
}

// viaHTTP rebuilds an answer the way a recorder reading the HTTP API must:
// log time in whole ms, expiries as log time plus a whole-ms ExpiresIn
// (floored at 0), and no log time at all on a not_holder error.
func viaHTTP(out LockOutput, reportAt int64) LockOutput {
	trunc := func(ns int64) int64 { return ns / ms * ms }
	if out.Code == CodeNotHolder {
		out.LogTimeNs = 0
		return out
	}
	at := trunc(reportAt)
	expiry := func(e int64) int64 { return at + trunc(max(0, e-reportAt)) }
	if out.ExpiresAtNs != 0 {
		out.ExpiresAtNs = expiry(out.ExpiresAtNs)
	}
	out.Holders = slices.Clone(out.Holders)
	for i := range out.Holders {
		out.Holders[i].ExpiresAtNs = expiry(out.Holders[i].ExpiresAtNs)
	}
	out.LogTimeNs = at
	return out
}

// TestLockSimulatedHistories generates runs of a correct and of a holder-ignoring reference server and checks the first always linearizes and the second never does.
func TestLockSimulatedHistories(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			start := time.Now()
			if got := porcupine.CheckOperationsTimeout(Lock, simulateLocks(seed, 600, false), 10*time.Second); got != porcupine.Ok {
				t.Fatalf("correct server: %v", got)
			}
			if got := porcupine.CheckOperationsTimeout(Lock, simulateLocks(seed, 600, true), 10*time.Second); got != porcupine.Illegal {
				t.Fatalf("buggy server: %v", got)
			}
			t.Logf("checked in %s", time.Since(start))
		})
	}
}
