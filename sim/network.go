// Package sim is a simulated network and clock for running real lockstep
// Raft nodes inside testing/synctest bubbles, where time is virtual: a
// Network of named endpoints with per-link latency, loss, duplication,
// partitions and pauses; a request/response Call path over it, and HTTP
// and a core/link.Link (MemberLink, which Raft runs on through
// core/raftlink) over Call; and a Clock with offset, drift, jumps and
// freezes.
//
// All random decisions come from one seeded generator, so the same seed and
// the same sequence of sends yields the same decisions. Goroutine scheduling
// inside a bubble is not deterministic, so a whole cluster run is only
// reproducible as far as the order of sends is. Messages on a link are not
// kept in order (jitter reorders them), as with raft's pooled TCP connections.
//
// Lifecycle inside a bubble: NewNetwork; per node a MemberLink, a
// raftlink.Net on it (RaftConfig) and HandleMember, then raft.NewRaft; at the
// end Shutdown().Error() every raft (which closes its transport), then
// Network.Close, so that no goroutine outlives the bubble.
package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Errors returned by Call. Callers test them with errors.Is.
var (
	// ErrUnreachable: the message was lost because the network knew the
	// destination could not be reached (partition, cut, missing or closed
	// endpoint). The caller still learns it only after its timeout, as with
	// silently dropped packets.
	ErrUnreachable = errors.New("sim: unreachable")
	// ErrTimeout: no reply within the timeout (random loss or slowness).
	ErrTimeout = errors.New("sim: timeout")
	// ErrRemote: the remote handler returned an error; its text follows.
	ErrRemote = errors.New("sim: remote error")
	// ErrClosed: the Network was closed.
	ErrClosed = errors.New("sim: network closed")
	// ErrNotDelivered accompanies a Call error when the handler never saw
	// the request, so it surely had no effect (like a refused connection).
	ErrNotDelivered = errors.New("sim: request not delivered")
)

// LatencyFunc samples one one-way delay for a message from→to. It must draw
// its randomness only from rng (the Network's seeded generator, already locked).
type LatencyFunc func(rng *rand.Rand, from, to string) time.Duration

// Link is the behaviour of one directed link.
type Link struct {
	LatencyBase   time.Duration // fixed part of the one-way delay
	LatencyJitter time.Duration // uniform extra delay in [0, LatencyJitter]
	Latency       LatencyFunc   // when set, replaces LatencyBase+LatencyJitter
	DropRate      float64       // probability in [0,1] that a message copy is lost
	DupRate       float64       // probability in [0,1] that a request is delivered twice
}

// Options configures a Network. Zero fields take the defaults noted.
type Options struct {
	Seed        uint64        // seeds the single generator behind every random decision
	Link        Link          // behaviour of every link without SetLink; zero is a perfect network
	RPCTimeout  time.Duration // raft RPC wait before an error (RaftConfig's Timeout); default 1s
	CallTimeout time.Duration // Call wait before ErrTimeout/ErrUnreachable when ctx has no deadline; default 5s
	MaxInFlight int           // message copies in flight at once; more are dropped; default 4096
	EventCap    int           // events kept by Events; later ones only counted; default 10000
	// OnEvent, if set, receives every event synchronously while the Network's
	// lock is held: it must be quick and must not call the Network.
	OnEvent func(Event)
	// OnHandlerPanic, if set, is told of a panic in an HTTP handler served
	// by HandleHTTP (node id, the value, the stack). As net/http does, the
	// panic only fails that request; the report makes it a finding.
	OnHandlerPanic func(id string, value any, stack []byte)
}

// link is a directed node pair.
type link struct{ from, to string }

// Network is a registry of endpoints by node ID and the faults between them.
// It is safe for concurrent use. Close it at the end of a bubble so that no
// message goroutine outlives it.
type Network struct {
	opts  Options
	start time.Time
	done  chan struct{} // closed by Close
	slots chan struct{} // one token per in-flight message copy
	jobs  chan func()   // unbuffered: hands a message copy to an idle worker (delivery.go)

	mu       sync.Mutex
	closed   bool
	rng      *rand.Rand
	links    map[link]Link
	groups   map[string]int // partition group per listed node; unlisted nodes share group -1
	isolated map[string]bool
	cuts     map[link]bool
	paused   map[string]chan struct{} // closed on Resume
	clocks   map[string]*Clock
	handlers map[string]*handlerEndpoint
	events   []Event
	stats    Stats
}

// NewNetwork returns an empty, fully connected network.
func NewNetwork(opts Options) *Network {
	if opts.RPCTimeout <= 0 {
		opts.RPCTimeout = time.Second
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 5 * time.Second
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 4096
	}
	if opts.EventCap <= 0 {
		opts.EventCap = 10000
	}
	return &Network{
		opts:  opts,
		start: time.Now(),
		done:  make(chan struct{}),
		slots: make(chan struct{}, opts.MaxInFlight),
		jobs:  make(chan func()),
		// The second PCG word is a fixed constant so one uint64 seeds everything.
		rng:      rand.New(rand.NewPCG(opts.Seed, 0x9e3779b97f4a7c15)),
		links:    make(map[link]Link),
		groups:   make(map[string]int),
		isolated: make(map[string]bool),
		cuts:     make(map[link]bool),
		paused:   make(map[string]chan struct{}),
		clocks:   make(map[string]*Clock),
		handlers: make(map[string]*handlerEndpoint),
	}
}

// Close stops the network: messages in flight are discarded, held ones are
// released and discarded, pending calls fail with ErrClosed, and the idle
// delivery workers end (until Close they wait for messages, so a bubble
// that never closes its Network deadlocks). Endpoints are not closed; raft
// closes its transport on Shutdown.
func (n *Network) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.closed = true
	close(n.done)
}

// SetLink sets the behaviour of the directed link from→to.
func (n *Network) SetLink(from, to string, l Link) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.links[link{from, to}] = l
	n.recordLocked(EventLink, from, to, fmt.Sprintf("base=%v jitter=%v custom=%t drop=%g dup=%g",
		l.LatencyBase, l.LatencyJitter, l.Latency != nil, l.DropRate, l.DupRate))
}

// Partition replaces the group assignment: nodes in different groups cannot
// talk. Nodes not listed (including ones registered later) form one more
// group together. A node listed twice ends up in the last group.
func (n *Network) Partition(groups ...[]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.groups = make(map[string]int)
	for i, g := range groups {
		for _, id := range g {
			n.groups[id] = i
		}
	}
	n.recordLocked(EventPartition, "", "", fmt.Sprint(groups))
}

// Isolate cuts id off from every other node, on top of any partition.
func (n *Network) Isolate(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.isolated[id] = true
	n.recordLocked(EventIsolate, id, "", "")
}

// Cut loses every message from→to; the reverse direction is unaffected.
func (n *Network) Cut(from, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cuts[link{from, to}] = true
	n.recordLocked(EventCut, from, to, "one-way")
}

// CutBoth cuts a→b and b→a.
func (n *Network) CutBoth(a, b string) {
	n.Cut(a, b)
	n.Cut(b, a)
}

// Heal clears partitions, isolations and cuts. Pauses and link settings stay.
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.groups = make(map[string]int)
	n.isolated = make(map[string]bool)
	n.cuts = make(map[link]bool)
	n.recordLocked(EventHeal, "", "", "")
}

// AttachClock makes Pause and Resume of id also Freeze and Unfreeze c.
func (n *Network) AttachClock(id string, c *Clock) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.clocks[id] = c
}

// Pause models a stop-the-world pause (such as a GC) of node id: messages
// from and to it are held, not dropped, and delivered as a backlog after
// Resume; its attached Clock freezes. Only its I/O and Clock stop: raft's own
// timers and goroutines inside the node keep running, so for example a paused
// leader still notices its lease expiring. Pausing a paused node does nothing.
func (n *Network) Pause(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.paused[id]; ok {
		return
	}
	n.paused[id] = make(chan struct{})
	if c := n.clocks[id]; c != nil {
		c.Freeze()
	}
	n.recordLocked(EventPause, id, "", "")
}

// Resume releases a paused node's held messages and unfreezes its Clock.
func (n *Network) Resume(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch, ok := n.paused[id]
	if !ok {
		return
	}
	delete(n.paused, id)
	close(ch)
	if c := n.clocks[id]; c != nil {
		c.Unfreeze()
	}
	n.recordLocked(EventResume, id, "", "")
}

// reachableLocked reports whether a message from→to may pass right now.
func (n *Network) reachableLocked(from, to string) bool {
	if from == to {
		return true
	}
	if n.isolated[from] || n.isolated[to] || n.cuts[link{from, to}] {
		return false
	}
	return n.groupLocked(from) == n.groupLocked(to)
}

func (n *Network) groupLocked(id string) int {
	if g, ok := n.groups[id]; ok {
		return g
	}
	return -1
}

// decision is the random fate of one message sent on a link.
type decision struct {
	drop       bool
	latency    time.Duration
	dup        bool
	dupLatency time.Duration // latency of the duplicate copy
}

// decideLocked draws the fate of one message from→to. Requests may be
// duplicated; responses may not (the caller keeps only the first anyway).
func (n *Network) decideLocked(from, to string, mayDup bool) decision {
	l, ok := n.links[link{from, to}]
	if !ok {
		l = n.opts.Link
	}
	var d decision
	if l.DropRate > 0 && n.rng.Float64() < l.DropRate {
		d.drop = true
		return d
	}
	d.latency = n.latencyLocked(l, from, to)
	if mayDup && l.DupRate > 0 && n.rng.Float64() < l.DupRate {
		d.dup = true
		d.dupLatency = n.latencyLocked(l, from, to)
	}
	return d
}

func (n *Network) latencyLocked(l Link, from, to string) time.Duration {
	if l.Latency != nil {
		return max(0, l.Latency(n.rng, from, to))
	}
	d := l.LatencyBase
	if l.LatencyJitter > 0 {
		d += time.Duration(n.rng.Int64N(int64(l.LatencyJitter) + 1))
	}
	return d
}
