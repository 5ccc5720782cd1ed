package node

import "fmt"

// Bug names one realistic mistake the testbed must be able to catch. Each
// is a real code path, compiled only into builds with the lockstep_bugs
// tag (bugs_on.go) and selected by flag; a production build (bugs_off.go)
// refuses every bug mode.
type Bug string

const (
	// BugFollowerGrant: a follower answers a try-lock from its own
	// (possibly stale) state and proposes the grant in the background.
	BugFollowerGrant Bug = "follower-grant"
	// BugLocalRenew: the leader extends a lease in its reply without going
	// through Raft, so the replicated expiry never moves.
	BugLocalRenew Bug = "local-renew"
	// BugWallClockExpiry: each replica expires leases by its own clock at
	// apply time instead of the leader's clock carried in the log.
	BugWallClockExpiry Bug = "wall-clock-expiry"
	// BugTokenInMemory: the fencing counter restarts on leader change/restore.
	BugTokenInMemory Bug = "token-in-memory"
	// BugQueueInMemory: wait queues vanish on leader change/restore.
	BugQueueInMemory Bug = "queue-in-memory"
	// BugForgetSettled: the state machine forgets how queued requests
	// ended, so a waiter whose node missed its grant (behind, or caught up
	// from a snapshot) reports a refusal for a grant that happened. Found
	// by leaderCrash with disk faults.
	BugForgetSettled Bug = "forget-settled"
	// BugOrphanWaiters: queued requests of a dead node process are granted
	// like any other (no hello, no suspects, no orphan release), so such a
	// grant holds the lock for its whole TTL with nobody told.
	BugOrphanWaiters Bug = "orphan-waiters"
	// BugReleaseOnGiveUp: a waiter whose caller left releases the grant it
	// finds instead of releasing it only as an orphan, taking the lease
	// from a retry of the same request that was answered with it. Found by
	// multiShard once clients retried through HTTP.
	BugReleaseOnGiveUp Bug = "release-on-give-up"
	// BugUnknownAsUnavailable: an outcome that is unknown (the command
	// reached a leader, the answer was lost) is reported as surely not
	// applied, so clients retry releases and renews as if nothing had
	// happened. Found by the simulator once clients went through HTTP.
	BugUnknownAsUnavailable Bug = "unknown-as-unavailable"
	// BugStaleValidate: GET /lock/validate answers from the answering
	// member's applied state without going through the log, while saying
	// it did, so a lagging or partitioned member calls a token valid after
	// its lease ended (core/service bugs_on.go).
	BugStaleValidate Bug = "stale-validate"
	// BugPermitOvercount: a semaphore of N permits grants one holder more
	// than N (lock.Bugs.PermitOvercount).
	BugPermitOvercount Bug = "permit-overcount"
	// BugDeadlockMiss: the state machine's in-group deadlock check never
	// fires (lock.Bugs.DeadlockMiss), so a wait that closes a wait-for
	// cycle is queued and the cycle stands until a wait elapses.
	BugDeadlockMiss Bug = "deadlock-miss"
	// BugDeadlockMissCross: the cross-shard deadlock detector finds
	// cycles but never breaks them (core/shard), so a cycle through
	// several shards stands until a wait elapses.
	BugDeadlockMissCross Bug = "deadlock-miss-cross"
	// BugGraceReviveRegranted: a renew of a lease whose grace window has
	// ended (the lock may be another's by then) still revives it with its
	// old token instead of answering not_holder (core/lock bugs.go).
	BugGraceReviveRegranted Bug = "grace-revive-regranted"
)

// ErrNoBugModes is why a build without the lockstep_bugs tag refuses a bug
// mode.
var ErrNoBugModes = fmt.Errorf("%w: this build has no bug modes; build with -tags lockstep_bugs (e.g. go run -tags lockstep_bugs ./cmd/locksim)", ErrConfig)

func (b Bug) validate() error {
	if b == "" {
		return nil
	}
	if len(Bugs) == 0 {
		return ErrNoBugModes
	}
	for _, known := range Bugs {
		if b == known {
			return nil
		}
	}
	return fmt.Errorf("%w: unknown bug mode %q", ErrConfig, b)
}
