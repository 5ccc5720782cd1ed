package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lockstep/lockstep/core/placement"
	"github.com/lockstep/lockstep/models"
)

// ShardLatency judges whether a fault on one lock shard stays there: per
// shard, the latency quantile of the acquires that do not wait (their
// latency is the service's, not a queue's) must stay within Bound on every
// shard not Excluded. An acquire is a client's request, from its first
// attempt to the answer that settled it: attempts under one request id
// follow each other until one gets a definite answer other than
// unavailable (which a client retries). A request left without such an
// answer counts as slower than any bound: its shard did not serve it.
type ShardLatency struct {
	// Shards is the lock shard count resources were placed over
	// (core/placement); zero disables the check.
	Shards int
	// Excluded are the shards the faults aim at (1-based).
	Excluded []int
	// Bound is the largest acceptable quantile.
	Bound time.Duration
	// Quantile is in (0, 1]; zero means 0.99.
	Quantile float64
}

// shardLatencySamplesMin is the fewest samples a shard needs for its
// quantile to say anything; a shard with fewer is a violation too, since
// a shard that served nothing did not carry the load.
const shardLatencySamplesMin = 50

// checkShardLatency reports every judged shard whose quantile exceeds the
// bound, and returns each shard's quantile in ns (index s-1; -1 when the
// shard had no samples, math.MaxInt64 when the quantile fell on an
// unserved attempt).
func checkShardLatency(h *History, opts ShardLatency, f *findings) []int64 {
	if opts.Shards <= 0 || opts.Bound <= 0 {
		return nil
	}
	q := opts.Quantile
	if q <= 0 || q > 1 {
		q = 0.99
	}
	samples := make([][]int64, opts.Shards)
	for _, r := range acquireRequests(h.Ops) {
		s := int(placement.Of(r.resource, opts.Shards)) - 1
		samples[s] = append(samples[s], r.latency())
	}
	quantiles := make([]int64, opts.Shards)
	for i, lat := range samples {
		quantiles[i] = -1
		if len(lat) > 0 {
			slices.Sort(lat)
			quantiles[i] = lat[int(math.Ceil(q*float64(len(lat))))-1]
		}
		shard := i + 1
		if slices.Contains(opts.Excluded, shard) {
			continue
		}
		switch {
		case len(lat) < shardLatencySamplesMin:
			f.add(Violation{Check: CheckShardLatency, Message: fmt.Sprintf(
				"shard %d served %d non-waiting acquires, fewer than the %d needed to judge it", shard, len(lat), shardLatencySamplesMin)})
		case quantiles[i] > int64(opts.Bound):
			f.add(Violation{Check: CheckShardLatency, Message: fmt.Sprintf(
				"shard %d: p%g of %d non-waiting acquires is %s, above the bound %s",
				shard, 100*q, len(lat), latencyText(quantiles[i]), opts.Bound)})
		}
	}
	return quantiles
}

// acquireRequest is one client request for a lock without waiting.
type acquireRequest struct {
	resource string
	call     int64
	// last is the latest attempt; the request is settled once it is.
	last Op
}

// latency is how long the request took to be served; unserved is MaxInt64.
func (r acquireRequest) latency() int64 {
	if !settled(r.last) {
		return math.MaxInt64
	}
	return r.last.Return - r.call
}

func settled(op Op) bool {
	return !op.Output.Unknown && op.Return != math.MaxInt64 && op.Output.Code != codeUnavailable
}

// acquireRequests groups the non-waiting acquire attempts into requests,
// in call order. Attempts without a request id are requests of their own.
func acquireRequests(ops []Op) []acquireRequest {
	sorted := slices.Clone(ops)
	slices.SortStableFunc(sorted, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
	type key struct{ client, id string }
	open := make(map[key]int)
	var out []acquireRequest
	for _, op := range sorted {
		in := op.Input
		if in.Op != models.Acquire || in.Wait || in.Resource == "" {
			continue
		}
		k := key{in.ClientID, in.RequestID}
		if i, ok := open[k]; ok && in.RequestID != "" && !settled(out[i].last) {
			out[i].last = op
			continue
		}
		open[k] = len(out)
		out = append(out, acquireRequest{resource: in.Resource, call: op.Call, last: op})
	}
	return out
}

// codeUnavailable is the API's definite "not served" answer (core/api).
const codeUnavailable = "unavailable"

func latencyText(ns int64) string {
	if ns == math.MaxInt64 {
		return "unserved"
	}
	return time.Duration(ns).String()
}
