package api

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// PathWatch streams a resource's (or a prefix's) events as JSON lines:
// GET /lock/watch?resource=R[&prefix=true][&start=SHARD:INDEX,...].
const PathWatch = "/lock/watch"

// CodeCompacted: a watch asked for events the member no longer holds (or
// never held: it caught up from a snapshot). Re-read status, then watch
// from now. Nothing is skipped silently.
const CodeCompacted Code = "compacted"

// WatchRequest selects what a watch follows.
type WatchRequest struct {
	// Resource is the resource watched, or with Prefix every resource
	// whose name starts with it ("" and Prefix: every resource).
	Resource string
	Prefix   bool
	// Start is, per shard, the first log index to deliver: the index after
	// the last entry the watcher saw there. A shard not named starts after
	// the last entry the member applied.
	Start map[int]uint64
}

// WatchEvent is one change of a resource. Like status, it names a lease by
// its fingerprint, never its id.
type WatchEvent struct {
	// Kind is grant, release, expire (a lease ran out), enqueue (a
	// request queued), join (a retry joined its queued request) or cancel
	// (a queued request left, its wait over or its caller gone); for a
	// lease with a grace window, grace (its TTL ran out: the window began)
	// then revive (a renew in the window), release, or expire (the window
	// ended).
	Kind             string `json:"kind"`
	Resource         string `json:"resource"`
	ClientID         string `json:"client_id"`
	LeaseFingerprint string `json:"lease_fingerprint"`
	Mode             Mode   `json:"mode"`
	// FencingToken is set on grant, release, expire, grace and revive.
	FencingToken uint64 `json:"fencing_token,omitempty"`
	// LogTimeMs is the log time (ms) of the entry.
	LogTimeMs int64 `json:"log_time"`
}

// WatchMessage is one line of a watch stream: first a header with Start,
// then one message per log entry with matching events, in log order per
// shard. A stream that cannot go on ends with a line holding Error
// (compacted, unavailable...).
type WatchMessage struct {
	// Start, on the header only: per shard, the first index the stream
	// delivers (resume from here if nothing newer arrives).
	Start map[int]uint64 `json:"start,omitempty"`
	Shard int            `json:"shard,omitempty"`
	// Index is the entry's log index in its shard; resume with
	// start=SHARD:INDEX+1.
	Index  uint64       `json:"index,omitempty"`
	Events []WatchEvent `json:"events,omitempty"`
	Error  *Error       `json:"error,omitempty"`
}

// FormatWatchStart renders per-shard start indexes as the start query
// parameter of GET /lock/watch, shards ascending.
func FormatWatchStart(start map[int]uint64) string {
	shards := make([]int, 0, len(start))
	for sh := range start {
		shards = append(shards, sh)
	}
	sort.Ints(shards)
	parts := make([]string, len(shards))
	for i, sh := range shards {
		parts[i] = fmt.Sprintf("%d:%d", sh, start[sh])
	}
	return strings.Join(parts, ",")
}

// ParseWatchStart reads the start query parameter: SHARD:INDEX pairs,
// comma-separated, shards from 1.
func ParseWatchStart(v string) (map[int]uint64, error) {
	out := make(map[int]uint64)
	for _, part := range strings.Split(v, ",") {
		sh, idx, ok := strings.Cut(part, ":")
		shard, err1 := strconv.Atoi(sh)
		index, err2 := strconv.ParseUint(idx, 10, 64)
		if !ok || err1 != nil || err2 != nil || shard < 1 {
			return nil, fmt.Errorf("start %q: %w", v, errWatchStart)
		}
		out[shard] = index
	}
	return out, nil
}

var errWatchStart = errors.New("want SHARD:INDEX[,SHARD:INDEX...]")
