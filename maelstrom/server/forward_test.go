package server

import (
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/link"
	"github.com/lockstep/lockstep/maelstrom"
)

// forwardCases is one request per group, sent to a follower.
var forwardCases = []struct {
	group string
	req   map[string]any
	ok    string
}{
	{groupKV, map[string]any{"type": "write", "key": 1, "value": 1}, "write_ok"},
	{groupLock, map[string]any{"type": "acquire", "resource": "r", "ttl": 5000}, "acquire_ok"},
}

// stableLeader waits until every node's named group knows the same leader
// and returns it.
func (c *cluster) stableLeader(name string) string {
	c.t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		leader := ""
		for _, srv := range c.servers {
			l := leaderOf(srv, name)
			if l == "" || (leader != "" && l != leader) {
				leader = ""
				break
			}
			leader = l
		}
		if leader != "" {
			return leader
		}
	}
	c.t.Fatalf("the %s group agreed on no leader within 15 s", name)
	return ""
}

// followers are the nodes other than leader, in id order.
func (c *cluster) followers(leader string) []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(c.servers)) {
		if id != leader {
			out = append(out, id)
		}
	}
	return out
}

// isForward reports whether body is a core/forward request of the named
// group on the Maelstrom link.
func isForward(body map[string]any, name string) bool {
	return body["type"] == maelstrom.LinkType && body["kind"] == float64(link.KindForward) &&
		body["group"] == float64(raftGroups[name])
}

// forwardLog counts the forwards the router saw, by destination.
type forwardLog struct {
	mu sync.Mutex
	to map[string]int
}

func (l *forwardLog) add(dest string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.to[dest]++
	total := 0
	for _, n := range l.to {
		total += n
	}
	return total
}

func (l *forwardLog) count(dest string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.to[dest]
}

// TestForwardThroughLink: goal — a follower's request reaches the group's
// leader as a core/forward request on the Maelstrom link, and a member's
// not-leader refusal (surely not proposed) is retried, at the leader.
// Method: per group, with a stable leader L, the router sends the
// follower F's first forward to the other follower X instead; one request
// to F, no client retry, must succeed after F's forwards went once to X
// and then to L.
func TestForwardThroughLink(t *testing.T) {
	c := newCluster(t, 3)
	for _, fc := range forwardCases {
		leader := c.stableLeader(fc.group)
		f, x := c.followers(leader)[0], c.followers(leader)[1]
		seen := &forwardLog{to: map[string]int{}}
		c.setIntercept(func(src, dest string, body map[string]any) fate {
			if src != f || !isForward(body, fc.group) {
				return fate{}
			}
			if seen.add(dest) == 1 {
				return fate{to: x}
			}
			return fate{}
		})
		b := c.call(f, fc.req)
		c.setIntercept(nil)
		wantType(t, fc.group+" request at a follower", b, fc.ok)
		if seen.count(leader) < 1 || seen.count(leader)+seen.count(x) < 2 {
			t.Fatalf("%s: %s's forwards by destination %v; want the first (sent to %s) retried at leader %s",
				fc.group, f, seen.to, x, leader)
		}
	}
}

// TestForwardToUnreachableLeader: goal — a forward the leader never
// answers is an unknown outcome for the client (timeout, indefinite),
// while one refused with a definite code before any handler ran is
// retried and, with no leader reachable, ends temporarily-unavailable
// (definite: surely not applied). Method: per group, the router drops
// every forward from a follower, then refuses them with code 11 on the
// leader's behalf; one request to that follower each time. The nodes run
// the binary's timing, so that no election moves the leader under -race.
func TestForwardToUnreachableLeader(t *testing.T) {
	c := newClusterTiming(t, 3, DefaultTiming())
	for _, fc := range forwardCases {
		leader := c.stableLeader(fc.group)
		f := c.followers(leader)[0]
		refused := []int{maelstrom.TemporarilyUnavailable}
		if fc.group == groupKV {
			// The register replica retries until the request's deadline
			// (the lock node gives up after NoLeaderAfter), so its last
			// forward may still be in flight then: unknown, a timeout.
			refused = append(refused, maelstrom.Timeout)
		}
		for _, tc := range []struct {
			fate    fate
			codes   []int
			atLeast int
		}{
			{fate{drop: true}, []int{maelstrom.Timeout}, 1},
			{fate{refuse: maelstrom.TemporarilyUnavailable}, refused, 2},
		} {
			seen := &forwardLog{to: map[string]int{}}
			c.setIntercept(func(src, dest string, body map[string]any) fate {
				if src != f || !isForward(body, fc.group) {
					return fate{}
				}
				seen.add(dest)
				return tc.fate
			})
			b := c.call(f, fc.req)
			c.setIntercept(nil)
			if code, ok := b["code"].(float64); b["type"] != "error" || !ok || !slices.Contains(tc.codes, int(code)) {
				t.Fatalf("%s request, forwards %+v: got %v, want an error of code %v", fc.group, tc.fate, b, tc.codes)
			}
			if n := seen.count(leader); n < tc.atLeast {
				t.Fatalf("%s: %d forwards from %s to %s, want at least %d", fc.group, n, f, leader, tc.atLeast)
			}
		}
	}
}
