package runner

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"sync"
	"time"

	"github.com/lockstep/lockstep/maelstrom"
)

// Latency distributions of a message's one-way delay.
const (
	LatencyExponential = "exponential"
	LatencyUniform     = "uniform"
	LatencyConstant    = "constant"
)

// maxInFlight bounds the messages the network holds; more are dropped and
// counted, as a congested network would.
const maxInFlight = 1 << 17

// NetStats counts what the network did with the messages it was given.
type NetStats struct {
	Sent        int `json:"sent"`
	Delivered   int `json:"delivered"`
	Partitioned int `json:"dropped_partition"`
	Overflow    int `json:"dropped_overflow"`
	Unroutable  int `json:"dropped_unroutable"`
}

// network routes messages between nodes and clients with a seeded latency
// and drops those that cross a partition, checked when a message is sent
// and again when it would arrive. Clients are never partitioned from nodes,
// as in Maelstrom, where partitions cut links between server nodes only.
type network struct {
	mean    time.Duration
	dist    string
	deliver func(maelstrom.Message) bool

	mu    sync.Mutex
	rng   *rand.Rand
	side  map[string]int // node -> side of the current partition; nil when healed
	queue msgQueue
	seq   uint64
	stats NetStats
	wake  chan struct{}
}

func newNetwork(seed int64, mean time.Duration, dist string, deliver func(maelstrom.Message) bool) *network {
	return &network{mean: mean, dist: dist, deliver: deliver, rng: rand.New(rand.NewSource(seed)), wake: make(chan struct{}, 1)}
}

// isNode tells server nodes (n0, n1, ...) from clients (c1, ...).
func isNode(id string) bool { return strings.HasPrefix(id, "n") }

// cut reports whether a partition separates a and b; callers hold mu.
func (n *network) cut(a, b string) bool {
	if n.side == nil || !isNode(a) || !isNode(b) {
		return false
	}
	return n.side[a] != n.side[b]
}

// latency draws one delay; callers hold mu.
func (n *network) latency() time.Duration {
	if n.mean <= 0 {
		return 0
	}
	switch n.dist {
	case LatencyConstant:
		return n.mean
	case LatencyUniform:
		return time.Duration(n.rng.Int63n(int64(2 * n.mean)))
	default:
		// Capped at 10x the mean so one message cannot stall a run.
		return time.Duration(math.Min(n.rng.ExpFloat64(), 10) * float64(n.mean))
	}
}

// send schedules m for delivery.
func (n *network) send(m maelstrom.Message) {
	n.mu.Lock()
	n.stats.Sent++
	switch {
	case n.cut(m.Src, m.Dest):
		n.stats.Partitioned++
		n.mu.Unlock()
		return
	case n.queue.Len() >= maxInFlight:
		n.stats.Overflow++
		n.mu.Unlock()
		return
	}
	n.seq++
	heap.Push(&n.queue, &inFlight{due: time.Now().Add(n.latency()), seq: n.seq, msg: m})
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// partition splits the nodes into the given sides until heal.
func (n *network) partition(sides [][]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.side = make(map[string]int)
	for i, s := range sides {
		for _, id := range s {
			n.side[id] = i
		}
	}
}

func (n *network) heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.side = nil
}

func (n *network) snapshot() NetStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

// run delivers due messages until ctx ends.
func (n *network) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var due []maelstrom.Message
		wait := time.Hour
		now := time.Now()
		n.mu.Lock()
		for n.queue.Len() > 0 {
			head := n.queue[0]
			if head.due.After(now) {
				wait = head.due.Sub(now)
				break
			}
			heap.Pop(&n.queue)
			if n.cut(head.msg.Src, head.msg.Dest) {
				n.stats.Partitioned++
				continue
			}
			due = append(due, head.msg)
		}
		n.mu.Unlock()
		for _, m := range due {
			ok := n.deliver(m)
			n.mu.Lock()
			if ok {
				n.stats.Delivered++
			} else {
				n.stats.Unroutable++
			}
			n.mu.Unlock()
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		case <-timer.C:
		}
	}
}

type inFlight struct {
	due time.Time
	seq uint64
	msg maelstrom.Message
}

// msgQueue is a min-heap by due time, then send order.
type msgQueue []*inFlight

func (q msgQueue) Len() int { return len(q) }
func (q msgQueue) Less(i, j int) bool {
	if !q[i].due.Equal(q[j].due) {
		return q[i].due.Before(q[j].due)
	}
	return q[i].seq < q[j].seq
}
func (q msgQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *msgQueue) Push(x any)   { *q = append(*q, x.(*inFlight)) }
func (q *msgQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return it
}

// describeSides renders a partition as "n0 n1 | n2".
func describeSides(sides [][]string) string {
	parts := make([]string, len(sides))
	for i, s := range sides {
		parts[i] = strings.Join(s, " ")
	}
	return strings.Join(parts, " | ")
}

// Fault is one nemesis window, in ns since the run started.
type Fault struct {
	Name   string `json:"name"`
	Start  int64  `json:"start_ns"`
	End    int64  `json:"end_ns"`
	Target string `json:"target"`
}

func (f Fault) String() string {
	return fmt.Sprintf("%s %s [%s, %s)", f.Name, f.Target, time.Duration(f.Start), time.Duration(f.End))
}
