package grpcapi

import (
	"sync"

	"github.com/lockstep/lockstep/core/lock"
)

// Changes wakes streams that follow a resource whenever an entry touching
// it applies on this member. It only signals: a woken stream reads the
// member's state itself, because Publish runs on the apply path, where
// reading the state would deadlock and blocking would stall the shard.
type Changes struct {
	mu sync.Mutex
	// watchers per resource; each channel holds at most one pending wake.
	// Bounded by the streams open, which the in-flight bound caps.
	watchers map[string]map[chan struct{}]struct{}
}

// NewChanges returns an empty set of watchers.
func NewChanges() *Changes {
	return &Changes{watchers: make(map[string]map[chan struct{}]struct{})}
}

// Publish wakes the watchers of ev's resource without blocking. Set it as
// (or chain it into) node.Config.Events of every shard on the member.
func (c *Changes) Publish(ev lock.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ch := range c.watchers[ev.Resource] {
		select {
		case ch <- struct{}{}:
		default: // a wake is already pending; one read covers both
		}
	}
}

// Watch follows resource until stop is called.
func (c *Changes) Watch(resource string) (changed <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	set := c.watchers[resource]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		c.watchers[resource] = set
	}
	set[ch] = struct{}{}
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.watchers[resource], ch)
		if len(c.watchers[resource]) == 0 {
			delete(c.watchers, resource)
		}
	}
}
