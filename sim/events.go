package sim

import (
	"fmt"
	"time"
)

// EventKind names what an Event records.
type EventKind string

// Fault changes, endpoint lifetimes and message fates that the Network records.
const (
	EventPartition EventKind = "partition" // Partition replaced the group assignment
	EventIsolate   EventKind = "isolate"   // a node was cut off from everyone
	EventCut       EventKind = "cut"       // a one-way link was cut
	EventHeal      EventKind = "heal"      // partitions, isolations and cuts were cleared
	EventPause     EventKind = "pause"     // a node's I/O (and attached Clock) froze
	EventResume    EventKind = "resume"    // a paused node's held I/O was released
	EventLink      EventKind = "link"      // a link's latency/drop/duplication settings changed
	EventUp        EventKind = "up"        // an endpoint (a call handler) registered
	EventDown      EventKind = "down"      // an endpoint closed (crash or shutdown)
	EventDrop      EventKind = "drop"      // a message copy was lost; Detail says why
	EventDuplicate EventKind = "duplicate" // a request will be delivered twice
)

// Event is one entry of the Network's log.
type Event struct {
	At     time.Duration // time since the Network was created (virtual inside synctest)
	Kind   EventKind
	From   string // sender or the node a fault applies to; empty when not about a node
	To     string // receiver; empty when not about a link
	Detail string
}

// String formats the event for logs.
func (e Event) String() string {
	s := fmt.Sprintf("%v %s", e.At, e.Kind)
	switch {
	case e.To != "":
		s += " " + e.From + "->" + e.To
	case e.From != "":
		s += " " + e.From
	}
	if e.Detail != "" {
		s += " " + e.Detail
	}
	return s
}

// Stats are the Network's message counters. Every offered copy ends either
// dropped or delivered, so once nothing is in flight
// Sent+Duplicated == Dropped+Delivered.
type Stats struct {
	Sent           uint64 // messages offered to the network (requests and responses)
	Duplicated     uint64 // extra copies created by duplication
	Dropped        uint64 // copies lost: random drop, partition, closed or missing endpoint, overload
	Delivered      uint64 // copies handed to the receiving endpoint
	Held           int    // copies currently waiting for a paused node to resume
	EventsOverflow uint64 // events not kept because the log was full (still streamed to OnEvent)
}

// recordLocked appends an event to the bounded log and streams it.
// The caller holds n.mu, which keeps the log and the stream in one order.
func (n *Network) recordLocked(kind EventKind, from, to, detail string) {
	e := Event{At: time.Since(n.start), Kind: kind, From: from, To: to, Detail: detail}
	if len(n.events) < n.opts.EventCap {
		n.events = append(n.events, e)
	} else {
		n.stats.EventsOverflow++
	}
	if n.opts.OnEvent != nil {
		n.opts.OnEvent(e)
	}
}

func (n *Network) record(kind EventKind, from, to, detail string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.recordLocked(kind, from, to, detail)
}

// Events returns a copy of the recorded events, oldest first.
func (n *Network) Events() []Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Event(nil), n.events...)
}

// Stats returns a snapshot of the message counters.
func (n *Network) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}
