package checker

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/placement"
	"github.com/lockstep/lockstep/models"
)

// Goal: the shard-latency check fails a shard whose p99 exceeds the bound,
// counts unserved attempts as too slow, ignores the excluded shard and
// waiting acquires, and passes when every judged shard is fast. Method: a
// synthetic history over two shards; shard 2 gets 2% unserved attempts
// (p99 unserved), then the same history with shard 2 excluded.
func TestShardLatency(t *testing.T) {
	resourceOn := func(s placement.Shard) string {
		for i := 0; ; i++ {
			if r := fmt.Sprintf("r%d", i); placement.Of(r, 2) == s {
				return r
			}
		}
	}
	r1, r2 := resourceOn(1), resourceOn(2)
	h := &History{}
	add := func(res string, latency time.Duration, wait, unknown bool) {
		op := Op{Input: models.LockInput{Op: models.Acquire, Resource: res, Wait: wait}, Call: 1000, Return: 1000 + int64(latency)}
		if unknown {
			op.Output.Unknown, op.Return = true, math.MaxInt64
		}
		h.Ops = append(h.Ops, op)
	}
	for i := 0; i < 100; i++ {
		add(r1, 5*time.Millisecond, false, false)
		add(r1, 10*time.Second, true, false) // waits: not judged
		add(r2, 5*time.Millisecond, false, i < 2)
	}
	opts := ShardLatency{Shards: 2, Bound: 100 * time.Millisecond}
	var f findings
	q := checkShardLatency(h, opts, &f)
	if len(f.list) != 1 || !strings.Contains(f.list[0].Message, "shard 2") || f.list[0].Check != CheckShardLatency {
		t.Fatalf("violations %+v, want one on shard 2", f.list)
	}
	if q[0] != int64(5*time.Millisecond) || q[1] != math.MaxInt64 {
		t.Fatalf("quantiles %v", q)
	}
	f = findings{}
	opts.Excluded = []int{2}
	checkShardLatency(h, opts, &f)
	if len(f.list) != 0 {
		t.Fatalf("excluded shard judged: %+v", f.list)
	}
	// A request retried after unavailable is served by its retry: its
	// latency runs from the first attempt to the answer.
	retried := &History{}
	for i := 0; i < 100; i++ {
		in := models.LockInput{Op: models.Acquire, Resource: r1, ClientID: "c1", RequestID: fmt.Sprint(i)}
		call := int64(i) * int64(time.Second)
		retried.Ops = append(retried.Ops,
			Op{Input: in, Output: models.LockOutput{Code: "unavailable"}, Call: call, Return: call + int64(time.Millisecond)},
			Op{Input: in, Output: models.LockOutput{Granted: true}, Call: call + int64(50*time.Millisecond), Return: call + int64(60*time.Millisecond)})
	}
	f = findings{}
	q = checkShardLatency(retried, ShardLatency{Shards: 2, Bound: 100 * time.Millisecond, Excluded: []int{2}}, &f)
	if len(f.list) != 0 || q[0] != int64(60*time.Millisecond) {
		t.Fatalf("retried requests: quantiles %v, violations %+v", q, f.list)
	}
	f = findings{}
	checkShardLatency(&History{}, ShardLatency{Shards: 2, Bound: time.Second, Excluded: []int{2}}, &f)
	if len(f.list) != 1 || !strings.Contains(f.list[0].Message, "fewer than") {
		t.Fatalf("a shard that served nothing passed: %+v", f.list)
	}
}
