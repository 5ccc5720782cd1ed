// Package proxy is the fault layer of real-process runs: a userspace TCP
// proxy per directed member link that can pass, delay, blackhole (hold
// every byte and close without closing anything) or reset (close both
// sides) the connections through it, and heal. Mesh builds every shape of
// partition of the nemesis catalogue from link states.
package proxy

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// State is what a link does to the bytes it carries.
type State int

const (
	// Pass forwards bytes (after the link's delay).
	Pass State = iota
	// Blackhole holds every byte and every close in both directions without
	// closing anything, as a dropped route does to TCP; on heal the held
	// bytes flow on, as TCP retransmission would deliver them.
	Blackhole
	// Reset closes every connection on both sides and closes new ones at
	// once, as a host answering RST would.
	Reset
)

func (s State) String() string {
	switch s {
	case Pass:
		return "pass"
	case Blackhole:
		return "blackhole"
	case Reset:
		return "reset"
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// connsPerLinkMax bounds the connections one link carries at once; more
// are closed on arrival (a stalled peer keeps dialing).
const connsPerLinkMax = 256

// Link is the state of one directed member link and the connections it
// carries. It is safe for concurrent use.
type Link struct {
	name string

	mu    sync.Mutex
	state State
	delay time.Duration
	// changed is closed and replaced at every change, waking held pumps.
	changed chan struct{}
	conns   map[*splice]struct{}
}

// NewLink returns a passing link without delay.
func NewLink(name string) *Link {
	return &Link{name: name, changed: make(chan struct{}), conns: make(map[*splice]struct{})}
}

// Name is the link's name, e.g. "n1->n2".
func (l *Link) Name() string { return l.name }

// Set changes the link's state. Reset closes every connection it carries.
func (l *Link) Set(s State) {
	l.mu.Lock()
	l.state = s
	close(l.changed)
	l.changed = make(chan struct{})
	var victims []*splice
	if s == Reset {
		for sp := range l.conns {
			victims = append(victims, sp)
		}
	}
	l.mu.Unlock()
	for _, sp := range victims {
		sp.close()
	}
}

// SetDelay makes every chunk arrive d after it was read (one-way latency).
func (l *Link) SetDelay(d time.Duration) {
	l.mu.Lock()
	l.delay = max(d, 0)
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// State returns the current state and delay.
func (l *Link) State() (State, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state, l.delay
}

// Conns is the number of connections the link carries now.
func (l *Link) Conns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// view is what a pump needs to decide on a chunk.
func (l *Link) view() (State, time.Duration, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state, l.delay, l.changed
}

// attach makes the link carry sp; it reports false (and sp must be
// closed) when the link resets or is full.
func (l *Link) attach(sp *splice) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == Reset || len(l.conns) >= connsPerLinkMax {
		return false
	}
	l.conns[sp] = struct{}{}
	return true
}

func (l *Link) detach(sp *splice) {
	l.mu.Lock()
	delete(l.conns, sp)
	l.mu.Unlock()
}

// splice is one proxied connection: the dialer's side and the target's.
type splice struct {
	client, server net.Conn
	once           sync.Once
}

func (sp *splice) close() {
	sp.once.Do(func() {
		_ = sp.client.Close()
		_ = sp.server.Close()
	})
}
