package checker

import (
	"fmt"
	"slices"
)

// CheckCallers names the check of the contract "nobody holds a lock for a
// caller that is gone" (README, Semantics), judged on the committed log:
//   - a hello (a node's new process) cancels every queued request whose
//     attempts were all held by that node's earlier processes;
//   - a queued request whose attempts are all held by members the entry's
//     leader stamped as unreachable (suspects) is cancelled, never granted.
const CheckCallers = "callers"

// Command is the part of one committed command that says who holds its
// callers: every acquire, hello and cancel, and any command whose entry is
// stamped with suspects.
type Command struct {
	Group int    `json:"group,omitempty"`
	Index uint64 `json:"index"`
	// Slot is the command's place in its entry (TraceEvent.Slot).
	Slot        int      `json:"slot,omitempty"`
	Op          string   `json:"op"`
	Client      string   `json:"client,omitempty"`
	RequestID   string   `json:"request_id,omitempty"`
	LeaseID     string   `json:"lease_id,omitempty"`
	WaitMs      int64    `json:"wait_ms,omitempty"`
	Host        string   `json:"host,omitempty"`
	Incarnation uint64   `json:"incarnation,omitempty"`
	Suspects    []string `json:"suspects,omitempty"`
	// Owner is, on a cancel, the attempt (its acquire's lease id) giving
	// up; empty when the cancel names the whole request.
	Owner string `json:"owner,omitempty"`
}

// Op values of Command the check reads.
const (
	CommandAcquire    = "acquire"
	CommandHello      = "hello"
	CommandCancel     = "cancel"
	CommandCancelMany = "cancel_many"
)

// maxSuspects mirrors the state machine's cap: a longer list is invalid and
// not installed.
const maxSuspects = 64

// attemptHost is a node process holding one caller of a queued request.
type attemptHost struct {
	host        string
	incarnation uint64
}

// queuedRequest is a single (not multi) queued request and every process
// that may hold one of its callers: the acquire that queued it and every
// later waiting acquire under its (client, request id), which may have
// joined it. At least the server's own list (attempts that left are kept),
// so "all of them are gone" never overstates.
type queuedRequest struct {
	lease, client, requestID, resource string
	attempts                           []attemptHost
}

// checkCallers replays each group's trace with its commands.
func checkCallers(h *History, trace []TraceEvent, f *findings) {
	if len(h.Commands) == 0 {
		return
	}
	queued := make(map[int]map[string]*queuedRequest)
	for _, k := range committedEntries(h, trace) {
		q := queued[k.group]
		if q == nil {
			q = make(map[string]*queuedRequest)
			queued[k.group] = q
		}
		cmd := k.cmd
		if cmd != nil && cmd.Op == CommandAcquire && cmd.RequestID != "" && cmd.WaitMs > 0 {
			for _, r := range q {
				if r.client == cmd.Client && r.requestID == cmd.RequestID {
					r.attempts = append(r.attempts, attemptHost{cmd.Host, cmd.Incarnation})
				}
			}
		}
		for _, ev := range k.events {
			// The grant names the processes whose attempts still waited for
			// it (the server's own list): none may be stamped unreachable.
			if ev.Kind == KindGrant && len(ev.Hosts) > 0 && cmd != nil && len(cmd.Suspects) <= maxSuspects &&
				!slices.ContainsFunc(ev.Hosts, func(h string) bool { return !slices.Contains(cmd.Suspects, h) }) {
				f.add(Violation{Check: CheckCallers, Resource: ev.Resource, LeaseIDs: []string{ev.LeaseID}, Index: ev.Index,
					Message: fmt.Sprintf("group %d index %d granted %s's queued request %s on %q, though every node holding its callers %v is stamped unreachable %v: a grant nobody can be told of",
						k.group+1, k.index, ev.Client, ev.LeaseID, ev.Resource, ev.Hosts, cmd.Suspects)})
			}
			if ev.Many != "" {
				continue // multi requests are not followed to hellos
			}
			switch ev.Kind {
			case KindEnqueue:
				if cmd != nil && cmd.Op == CommandAcquire && cmd.LeaseID == ev.LeaseID {
					q[ev.LeaseID] = &queuedRequest{lease: ev.LeaseID, client: ev.Client, requestID: cmd.RequestID,
						resource: ev.Resource, attempts: []attemptHost{{cmd.Host, cmd.Incarnation}}}
				}
			case KindGrant, KindCancel:
				delete(q, ev.LeaseID)
			}
		}
		if cmd != nil && cmd.Op == CommandHello {
			earlier := func(a attemptHost) bool { return a.host == cmd.Host && a.incarnation != cmd.Incarnation }
			for lease, r := range q {
				if len(r.attempts) > 0 && !slices.ContainsFunc(r.attempts, func(a attemptHost) bool { return !earlier(a) }) {
					f.add(Violation{Check: CheckCallers, Resource: r.resource, LeaseIDs: []string{lease}, Index: k.index,
						Message: fmt.Sprintf("group %d index %d: the hello of %s's new process left %s's request %s queued on %q, though only its earlier process held the callers",
							k.group+1, k.index, cmd.Host, r.client, lease, r.resource)})
					delete(q, lease)
				}
			}
		}
	}
}
