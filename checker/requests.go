package checker

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockstep/lockstep/core/placement"
	"github.com/lockstep/lockstep/models"
)

// CheckRequestIDs names the request-id check.
const CheckRequestIDs = "request-ids"

// dedupeTrust is how much log time after an acquire was granted its
// request id is surely still remembered: the server keeps ids for
// lock.DefaultConfig's DedupeWindow (1 min) from the request's arrival, and
// a queued request may have arrived its whole wait before the grant.
const dedupeTrust = 40 * time.Second

// checkRequestIDs judges request_id_reused answers, which the lock model
// sets aside (they change nothing): one is only right when the same
// (client, request id) was used, by an operation called before the answer
// returned, for a different request (resource, mode, ttl or policy) on the
// same shard. A request id is deduplicated per shard (README, Semantics):
// under one id, a resource on another shard is an independent request, so
// a use there never makes this one a reuse. The model itself checks that
// a request id is never granted twice for one resource.
//
// Once an acquire was granted (or answered lease_ended), its id stands for
// that request for the dedupe window, on its shard's state machine: a
// later acquire under the id for the same request must not be refused as
// reused, and one for a different request on that shard must be, and
// must never be granted a second lease (checkReuseAnswers).
func checkRequestIDs(h *History, opts Options, f *findings) {
	uses := make(map[[2]string][]Op)
	for _, op := range h.Ops {
		if (op.Input.Op == models.Acquire || op.Input.Op == models.AcquireMany) && op.Input.RequestID != "" {
			k := [2]string{op.Input.ClientID, op.Input.RequestID}
			uses[k] = append(uses[k], op)
		}
	}
	shardOf := placer(h, opts)
	of := bodyOf
	for k, ops := range uses {
		for _, op := range ops {
			if op.Output.Unknown || op.Output.Code != models.CodeRequestIDReused {
				continue
			}
			s, placed := shardOf(op.Input)
			justified := false
			for _, other := range ops {
				if of(other.Input) == of(op.Input) || other.Call > op.Return {
					continue
				}
				if so, ok := shardOf(other.Input); placed && ok && so != s {
					continue // another shard's request, not a reuse here
				}
				justified = true
				break
			}
			if !justified {
				f.add(Violation{Check: CheckRequestIDs, Resource: op.Input.Resource, At: op.Return,
					Message: fmt.Sprintf("client %s request %q answered request_id_reused, but no other request on its shard used that id", k[0], k[1])})
			}
		}
	}
	checkReuseAnswers(h, uses, shardOf, f)
}

// placer returns where a request's resource lives (an acquire_many's
// first resource: an atomic one is on one shard), as the run placed it:
// by core/placement over opts.Shards lock shards (the groups the trace
// and entries name are then the shard numbers), on the one group 0 when
// there is one; for runs saved without the shard count, where the trace
// saw it, and unknown otherwise.
func placer(h *History, opts Options) func(models.LockInput) (int, bool) {
	groupOf := make(map[string]int)
	if opts.Shards <= 0 {
		for _, ev := range h.Trace {
			groupOf[ev.Resource] = ev.Group
		}
	}
	return func(in models.LockInput) (int, bool) {
		r := in.Resource
		if in.Op == models.AcquireMany && len(in.Resources) > 0 {
			r = in.Resources[0]
		}
		switch {
		case opts.Shards > 1:
			return int(placement.Of(r, opts.Shards)), true
		case opts.Shards == 1:
			return 0, true
		}
		g, ok := groupOf[r]
		return g, ok
	}
}

// requestBody is what makes two acquires under one request id the same
// request (the wait may differ: a retry sends what is left of it).
type requestBody struct {
	resource, mode, policy string
	ttl                    int64
}

func bodyOf(in models.LockInput) requestBody {
	mode := in.Mode
	if mode == "" {
		mode = models.Exclusive
	}
	policy := in.Policy
	if policy == "" {
		policy = "fifo"
	}
	// An acquire_many is another request than any single acquire.
	resource := in.Resource
	if in.Op == models.AcquireMany {
		resource = "many:" + strings.Join(in.Resources, "\x00")
	}
	return requestBody{resource, mode, policy, in.TTLNs}
}

// checkReuseAnswers judges the answers to acquires sent under a request id
// after a grant under that id (see checkRequestIDs). Pairs are judged only
// when both resources are known to be on one shard and little enough log
// time has passed for the id to be surely remembered there.
func checkReuseAnswers(h *History, uses map[[2]string][]Op, group func(models.LockInput) (int, bool), f *findings) {
	entries := make(map[int][]Entry)
	for _, e := range h.Entries {
		entries[e.Group] = append(entries[e.Group], e)
	}
	for g := range entries {
		slices.SortFunc(entries[g], func(a, b Entry) int { return cmp.Compare(a.Index, b.Index) })
	}
	// logTimeBy is the latest log time group g had applied by virtual time
	// at: an upper bound on the log time of anything answered by then.
	logTimeBy := func(g int, at int64) (int64, bool) {
		es := entries[g]
		i := sort.Search(len(es), func(i int) bool { return es[i].At > at })
		if i == 0 {
			return 0, false
		}
		return es[i-1].LogTime, true
	}
	for k, ops := range uses {
		for _, a := range ops {
			if a.Output.Unknown || a.Output.LogTimeNs == 0 || !(a.Output.Granted || a.Output.Code == models.CodeLeaseEnded) {
				continue
			}
			ga, ok := group(a.Input)
			if !ok {
				continue
			}
			for _, x := range ops {
				if x.Call <= a.Return || x.Output.Unknown {
					continue
				}
				gx, ok := group(x.Input)
				lt, known := logTimeBy(gx, x.Return)
				if !ok || gx != ga || !known || lt-a.Output.LogTimeNs >= int64(dedupeTrust) {
					continue
				}
				same := bodyOf(x.Input) == bodyOf(a.Input)
				switch {
				case same && x.Output.Code == models.CodeRequestIDReused:
					f.add(Violation{Check: CheckRequestIDs, Resource: x.Input.Resource, At: x.Return,
						Message: fmt.Sprintf("client %s request %q was refused as reused, but the same request had been granted under that id (lease %s, log time %s)",
							k[0], k[1], a.Output.LeaseID, fmtNs(a.Output.LogTimeNs))})
				case !same && (x.Output.Granted || x.Output.Code == models.CodeLeaseEnded || x.Output.Code == ""):
					f.add(Violation{Check: CheckRequestIDs, Resource: x.Input.Resource, At: x.Return,
						Message: fmt.Sprintf("client %s request %q, sent for %s after that id was granted on the same shard for %s (lease %s), was answered %s instead of request_id_reused",
							k[0], k[1], describeBody(x.Input), describeBody(a.Input), a.Output.LeaseID, describeAnswer(x.Output))})
				}
			}
		}
	}
}

func describeBody(in models.LockInput) string {
	b := bodyOf(in)
	return fmt.Sprintf("%s %q ttl %s %s", b.mode, strings.TrimPrefix(b.resource, "many:"), time.Duration(b.ttl), b.policy)
}

func describeAnswer(o models.LockOutput) string {
	switch {
	case o.Granted:
		return "granted (lease " + o.LeaseID + ")"
	case o.Code != "":
		return o.Code
	}
	return "not granted"
}
