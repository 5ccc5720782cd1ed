// Package api holds the HTTP/JSON wire contract of lockstep: request and
// response bodies, error codes and their HTTP statuses. Server, client,
// benchmarks and the simulator all speak these types, so the contract lives
// in one place.
//
// All durations are milliseconds.
package api

import (
	"crypto/sha256"
	"encoding/hex"
)

// Mode is the lock mode of a request or a holder.
type Mode string

const (
	Exclusive Mode = "exclusive"
	Shared    Mode = "shared"
)

// Policy decides what happens when a lock frees while requests wait.
type Policy string

const (
	// FIFO hands a freed lock to the queue head(s) inside the state machine.
	FIFO Policy = "fifo"
	// Throughput lets waiters race with fresh requests (unfair, fewer steps).
	Throughput Policy = "throughput"
)

// AcquireRequest is the body of POST /lock/acquire.
type AcquireRequest struct {
	Resource  string `json:"resource"`
	ClientID  string `json:"client_id"`
	TTLMs     int64  `json:"ttl"`
	Mode      Mode   `json:"mode,omitempty"`
	WaitMs    int64  `json:"wait,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	Policy    Policy `json:"policy,omitempty"`
	// Permits N (2..MaxPermits) makes the resource a counting semaphore
	// of N exclusive holders, fixed by the acquire that creates it while
	// anyone holds or waits for it; every acquire of it must name the
	// same N (else 409 permits_mismatch). 0 or 1: a plain lock.
	Permits int64 `json:"permits,omitempty"`
	// GraceMs (0..TTLMs) keeps the resource from everyone else that long
	// after the lease expires (not after a release): a renew within it
	// revives the lease with its fencing token; 0 is none (README "Grace
	// window").
	GraceMs int64 `json:"grace,omitempty"`
}

// MaxPermits is the largest semaphore (lock.MaxPermits).
const MaxPermits = 1024

// AcquireResponse is the 200 reply of POST /lock/acquire. When Granted is
// false the lease fields are empty and QueuePosition tells where the request
// stood when it gave up (0 for a try-lock).
type AcquireResponse struct {
	Granted       bool   `json:"granted"`
	LeaseID       string `json:"lease_id,omitempty"`
	FencingToken  uint64 `json:"fencing_token,omitempty"`
	ExpiresInMs   int64  `json:"expires_in,omitempty"`
	Mode          Mode   `json:"mode,omitempty"`
	QueuePosition int    `json:"queue_position,omitempty"`
	// LogTimeMs is the state machine's log time (ms) at which the answer was
	// decided; checkers use it to judge expiry.
	LogTimeMs int64 `json:"log_time"`
}

// AcquireManyRequest is the body of POST /lock/acquire_many: every
// resource (1..MaxManyResources, distinct) at once or none. Resources on
// several shards need Order OrderCanonical (else 400 cross_shard).
type AcquireManyRequest struct {
	Resources []string `json:"resources"`
	ClientID  string   `json:"client_id"`
	TTLMs     int64    `json:"ttl"`
	Mode      Mode     `json:"mode,omitempty"`
	WaitMs    int64    `json:"wait,omitempty"`
	RequestID string   `json:"request_id,omitempty"`
	Policy    Policy   `json:"policy,omitempty"`
	Order     Order    `json:"order,omitempty"`
	// GraceMs is every lease's grace window, as AcquireRequest.GraceMs.
	GraceMs int64 `json:"grace,omitempty"`
}

// MaxManyResources is the most resources one acquire_many may name.
const MaxManyResources = 64

// Order says how an acquire_many whose resources span shards is taken.
type Order string

// OrderCanonical takes the shards one by one in ascending shard order,
// each shard's resources atomically, releasing what it took when a later
// shard refuses. Not atomic: others can see the earlier shards held
// while a later one is being taken.
const OrderCanonical Order = "canonical"

// ManyKind says how an acquire_many was served.
type ManyKind string

const (
	// KindAtomic: every resource is on one shard, granted in one log entry
	// or not at all.
	KindAtomic ManyKind = "atomic"
	// KindCanonical: shard by shard in ascending shard order (OrderCanonical).
	KindCanonical ManyKind = "canonical"
)

// ManyLease is one resource's lease in an AcquireManyResponse; release
// and renew it as the lease of a single acquire.
type ManyLease struct {
	Resource     string `json:"resource"`
	LeaseID      string `json:"lease_id"`
	FencingToken uint64 `json:"fencing_token"`
	ExpiresInMs  int64  `json:"expires_in"`
}

// AcquireManyResponse is the 200 reply of POST /lock/acquire_many. Granted
// means every resource is held, Leases in request order; otherwise Leases
// is empty, Blocked names the first resource that was not free and
// QueuePosition where the request stood (furthest back) when it gave up.
type AcquireManyResponse struct {
	Granted       bool        `json:"granted"`
	Kind          ManyKind    `json:"kind"`
	Leases        []ManyLease `json:"leases"`
	Blocked       string      `json:"blocked,omitempty"`
	QueuePosition int         `json:"queue_position,omitempty"`
	// LogTimeMs is the log time (ms) the answer was decided at; for a
	// canonical request, that of the last shard it asked.
	LogTimeMs int64 `json:"log_time"`
}

// ReleaseRequest is the body of POST /lock/release.
type ReleaseRequest struct {
	Resource string `json:"resource"`
	LeaseID  string `json:"lease_id"`
}

// ReleaseResponse is the 200 reply of POST /lock/release.
type ReleaseResponse struct {
	Released  bool  `json:"released"`
	LogTimeMs int64 `json:"log_time"`
}

// RenewRequest is the body of POST /lock/renew. TTL 0 reuses the lease's TTL.
type RenewRequest struct {
	Resource string `json:"resource"`
	LeaseID  string `json:"lease_id"`
	TTLMs    int64  `json:"ttl,omitempty"`
}

// RenewResponse is the 200 reply of POST /lock/renew.
type RenewResponse struct {
	ExpiresInMs  int64  `json:"expires_in"`
	FencingToken uint64 `json:"fencing_token"`
	LogTimeMs    int64  `json:"log_time"`
}

// Holder is one current holder in a StatusResponse. It carries a
// fingerprint of the lease id, never the id itself: the id is a capability
// (it renews and releases the lease), so only the holder's own acquire
// response contains it.
type Holder struct {
	ClientID string `json:"client_id"`
	// LeaseFingerprint is LeaseFingerprint(lease id): a holder can tell its
	// own lease in a status reply without anyone else learning the id.
	LeaseFingerprint string `json:"lease_fingerprint"`
	Mode             Mode   `json:"mode"`
	FencingToken     uint64 `json:"fencing_token"`
	ExpiresInMs      int64  `json:"expires_in"`
	// State is HolderHeld, or HolderGrace once the lease's TTL ran out and
	// it waits in its grace window: it still keeps others from the lock,
	// but its token is not valid; GraceRemainingMs is what is left of the
	// window.
	State            HolderState `json:"state"`
	GraceMs          int64       `json:"grace,omitempty"`
	GraceRemainingMs int64       `json:"grace_remaining,omitempty"`
}

// HolderState says whether a holder holds its lease or waits in its grace
// window.
type HolderState string

const (
	HolderHeld  HolderState = "held"
	HolderGrace HolderState = "grace"
)

// LeaseFingerprint returns the first 8 hex digits of the SHA-256 of leaseID
// (the 32-digit lowercase hex string an acquire returns). 32 bits tell
// holders apart and reveal nothing usable about the 128-bit id.
func LeaseFingerprint(leaseID string) string {
	sum := sha256.Sum256([]byte(leaseID))
	return hex.EncodeToString(sum[:4])
}

// Waiter is one queued request in a StatusResponse.
type Waiter struct {
	ClientID string `json:"client_id"`
	Mode     Mode   `json:"mode"`
}

// StatusResponse is the reply of GET /lock/status?resource=R.
type StatusResponse struct {
	Resource  string   `json:"resource"`
	Holders   []Holder `json:"holders"`
	Queue     []Waiter `json:"queue"`
	LogTimeMs int64    `json:"log_time"`
	// Permits is the N of a semaphore (its holders are its permits),
	// omitted for a plain lock.
	Permits int64 `json:"permits,omitempty"`
	// CaughtUp is set on stale replies only: true once the member answering
	// caught up with its shard's leader since it started and still hears
	// from a leader; false means this view may be far behind (a restarted
	// member may hold only its snapshot) and an empty table proves nothing.
	CaughtUp *bool `json:"caught_up,omitempty"`
}

// FenceResponse is the reply of GET /lock/fence?resource=R: read through
// the log, like status.
type FenceResponse struct {
	Resource string `json:"resource"`
	// HolderTokenMax is the highest fencing token among R's current
	// holders, 0 when nobody holds R. It is not the highest token ever
	// granted on R: the state machine keeps no per-resource mark, so once
	// the last holder is gone it is 0 again.
	HolderTokenMax uint64 `json:"holder_token_max"`
	LogTimeMs      int64  `json:"log_time"`
}

// ValidateResponse is the reply of GET /lock/validate?resource=R&token=T:
// whether T is the fencing token of one of R's current holders (Chubby's
// CheckSequencer), for a downstream service that wants to ask rather than
// keep its own high-water mark.
type ValidateResponse struct {
	Resource string `json:"resource"`
	Token    uint64 `json:"token"`
	Valid    bool   `json:"valid"`
	// HolderTokenMax is FenceResponse's, read in the same step.
	HolderTokenMax uint64 `json:"holder_token_max"`
	LogTimeMs      int64  `json:"log_time"`
	// Stale is set when the answer came from the answering member's
	// applied state (stale=true), not through the log: it may then say
	// valid for a token whose lease just ended or was superseded, never
	// for a token that was never granted on R.
	Stale bool `json:"stale,omitempty"`
	// CaughtUp is set on stale replies only, as StatusResponse's: false
	// means this member's state may be far behind, so the staleness is not
	// bounded by replication lag alone.
	CaughtUp *bool `json:"caught_up,omitempty"`
}

// Node is one member in a ClusterResponse.
type Node struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	HTTPAddr string `json:"http_addr"`
	// State is leader, follower, candidate, shutdown, unreachable (the
	// leader has not reached it for longer than its unreachable bound) or
	// unknown (this view cannot tell).
	State string `json:"state"`
	// LastContactMs is how long ago the leader last reached this member
	// (0: within the last heartbeat). Only the leader's view has it; it is
	// omitted for the leader itself and in a local view.
	LastContactMs *int64 `json:"last_contact_ms,omitempty"`
}

// Views of a ClusterResponse.
const (
	// ViewLeader: the roles are the leader's (the only node that sees
	// every member's heartbeats).
	ViewLeader = "leader"
	// ViewLocal: the answering node could not get the leader's view; roles
	// it cannot know are "unknown".
	ViewLocal = "local"
)

// ClusterResponse is the reply of GET /cluster.
type ClusterResponse struct {
	// Leader leads the metadata group (the only group of a cluster without
	// one).
	Leader string `json:"leader"`
	// MapVersion is the version of the shard map the answering node routes
	// by; a router holding an older one refreshes it.
	MapVersion uint64 `json:"map_version"`
	// View says whose view the node states are: ViewLeader or ViewLocal.
	// The states are those of shard 1's group.
	View   string  `json:"view"`
	Nodes  []Node  `json:"nodes"`
	Shards []Shard `json:"shards"`
}

// Shard is one lock shard (Raft group) in a ClusterResponse, as the
// answering node sees it.
type Shard struct {
	ID      int      `json:"id"`
	Members []string `json:"members"`
	// Leader is the group's leader id ("" while none is known); LeaderHTTP
	// its API address, where a router sends the shard's requests.
	Leader      string `json:"leader"`
	LeaderHTTP  string `json:"leader_http,omitempty"`
	Term        uint64 `json:"term"`
	CommitIndex uint64 `json:"commit_index"`
	// Resources counts resources with holders or waiters.
	Resources int `json:"resources"`
}

// Health is the reply of GET /livez, /readyz and /healthz. A 503 from
// /readyz or /healthz also fills Error and Code, so it is an Error too.
type Health struct {
	// Status is "ok", or "unavailable" when not ready.
	Status    string `json:"status"`
	Error     string `json:"error,omitempty"`
	Code      Code   `json:"code,omitempty"`
	Node      string `json:"node"`
	RaftState string `json:"raft_state"`
	Leader    string `json:"leader,omitempty"`
	// LeaderContactMs is how long ago this node heard from the leader (0 on
	// the leader); omitted when it knows no leader.
	LeaderContactMs *int64 `json:"leader_contact_ms,omitempty"`
	CommitIndex     uint64 `json:"commit_index"`
	AppliedIndex    uint64 `json:"applied_index"`
}

// Error is the body of every non-2xx reply. A lease_ended error also names
// the lease that ended, so a retrying client learns which grant it had.
type Error struct {
	Error        string `json:"error"`
	Code         Code   `json:"code"`
	LeaseID      string `json:"lease_id,omitempty"`
	FencingToken uint64 `json:"fencing_token,omitempty"`
	// Cycle, on a deadlock error, is the wait-for cycle the acquire would
	// have closed, by client id: the requester first, each waiting for
	// the next, the last for the requester.
	Cycle []string `json:"cycle,omitempty"`
}

// Code is a machine-readable error class.
type Code string

const (
	CodeInvalidArgument Code = "invalid_argument"
	CodeNotHolder       Code = "not_holder"
	// CodeRequestIDReused: the (client_id, request_id) pair was first used
	// for a different acquire (resource, mode, ttl, policy or permits) on the same
	// shard; ids are remembered per shard.
	CodeRequestIDReused Code = "request_id_reused"
	// CodeLeaseEnded: a retried acquire whose request was granted, but that
	// lease has since been released or has expired.
	CodeLeaseEnded Code = "lease_ended"
	// CodeUnavailable: the request was surely not applied (no leader in
	// time, shutting down); retrying anything is safe.
	CodeUnavailable Code = "unavailable"
	// CodeOverloaded: the member answering already serves its bound of
	// requests at once (--max-in-flight) and refused this one before doing
	// anything: retrying it is safe, after Retry-After or on another member.
	CodeOverloaded Code = "overloaded"
	// CodeOutcomeUnknown: the request reached a leader but its outcome is
	// unknown (leadership lost, timeout after proposing). Retry an acquire
	// with the same request_id; check before retrying a release or renew.
	CodeOutcomeUnknown   Code = "outcome_unknown"
	CodeNotFound         Code = "not_found"
	CodeMethodNotAllowed Code = "method_not_allowed"
	// CodeResourceExhausted: a configured bound (queue length, lock count) was hit.
	CodeResourceExhausted Code = "resource_exhausted"
	// CodeCrossShard: an acquire_many named resources on several shards
	// without "order":"canonical"; nothing changed.
	CodeCrossShard Code = "cross_shard"
	CodeInternal   Code = "internal"
	// CodeUnauthenticated: ACLs are on and the request carries no known
	// bearer token (401).
	CodeUnauthenticated Code = "unauthenticated"
	// CodePermissionDenied: the token lacks the right in the resource's
	// namespace (403).
	CodePermissionDenied Code = "permission_denied"
	// CodeFailedPrecondition: the present state forbids the change (the
	// last admin token cannot be deleted); nothing changed. 409 Conflict,
	// as the lock conflicts are, and gRPC FAILED_PRECONDITION.
	CodeFailedPrecondition Code = "failed_precondition"
	// CodeBadPermits: an acquire's permits can never be granted (above
	// MaxPermits, negative, with mode shared, or on acquire_many); 400.
	CodeBadPermits Code = "bad_permits"
	// CodePermitsMismatch: the acquire names other permits than the
	// resource has while it is held or waited for (a semaphore of another
	// N, a plain lock asked as a semaphore or the reverse, acquire_many on
	// a semaphore); nothing changed. 409, gRPC FAILED_PRECONDITION.
	CodePermitsMismatch Code = "permits_mismatch"
	// CodeDeadlock: an acquire with a wait would have closed a wait-for
	// cycle (Error.Cycle) and was refused at once; nothing was queued.
	// 409 Conflict, gRPC ABORTED.
	CodeDeadlock Code = "deadlock"
	// CodeBadGrace: an acquire's grace is not in 0..ttl ms (400); nothing
	// changed.
	CodeBadGrace Code = "bad_grace"
)

// HTTPStatus maps an error code to the status the server answers with.
func (c Code) HTTPStatus() int {
	switch c {
	case CodeInvalidArgument, CodeCrossShard, CodeBadPermits, CodeBadGrace:
		return 400
	case CodeUnauthenticated:
		return 401
	case CodePermissionDenied:
		return 403
	case CodeNotFound:
		return 404
	case CodeCompacted:
		return 410
	case CodeMethodNotAllowed:
		return 405
	case CodeNotHolder, CodeRequestIDReused, CodeLeaseEnded, CodeFailedPrecondition, CodePermitsMismatch, CodeDeadlock:
		return 409
	case CodeResourceExhausted:
		return 429
	case CodeUnavailable, CodeOverloaded:
		return 503
	case CodeOutcomeUnknown:
		return 504
	default:
		return 500
	}
}

// Paths of the public API.
const (
	PathAcquire = "/lock/acquire"
	// PathAcquireMany takes several resources at once (AcquireManyRequest).
	PathAcquireMany = "/lock/acquire_many"
	PathRelease     = "/lock/release"
	PathRenew       = "/lock/renew"
	PathStatus      = "/lock/status"
	PathCluster     = "/cluster"
	PathMetrics     = "/metrics"
	// PathLive answers 200 while the process serves.
	PathLive = "/livez"
	// PathReady answers 200 only while the node can serve consistent
	// requests (see README); PathHealth is the same check.
	PathReady  = "/readyz"
	PathHealth = "/healthz"
	// PathFence answers a resource's highest holder token (FenceResponse).
	PathFence = "/lock/fence"
	// PathValidate answers whether a token is a current holder's
	// (ValidateResponse).
	PathValidate = "/lock/validate"
)

// Paths of the ACL administration API (an admin token's, except
// PathForceRelease, which takes release_any in the resource's namespace).
const (
	// PathACLToken creates (or replaces) a token: POST Token, answered
	// with the token and its secret, shown this once.
	PathACLToken = "/acl/token"
	// PathACLTokenDelete deletes a token: POST TokenDelete.
	PathACLTokenDelete = "/acl/token/delete"
	// PathACLTokens lists the tokens (never their secrets): GET.
	PathACLTokens = "/acl/tokens"
	// PathACLQuota sets a namespace's quota (all limits zero clears it):
	// POST Quota.
	PathACLQuota = "/acl/quota"
	// PathACLQuotas lists the quotas: GET.
	PathACLQuotas = "/acl/quotas"
	// PathForceRelease releases every holder of a resource: POST
	// ForceReleaseRequest.
	PathForceRelease = "/acl/force_release"
)

// Token is a bearer token as the ACL API shows it. Rights are acquire
// (acquire; release and renew by lease id), release_any, read and admin;
// namespace "*" is every namespace.
type Token struct {
	ID         string   `json:"id,omitempty"`
	Name       string   `json:"name,omitempty"`
	Namespaces []string `json:"namespaces"`
	Rights     []string `json:"rights"`
	// Secret is sent to create a token with a chosen secret (else one is
	// drawn) and answered once, on creation.
	Secret string `json:"secret,omitempty"`
}

// TokenDelete names the token to delete.
type TokenDelete struct {
	ID string `json:"id"`
}

// TokenList is the reply of GET /acl/tokens.
type TokenList struct {
	Tokens []Token `json:"tokens"`
}

// Quota limits one namespace. The held and queued counts are exact per lock
// shard (MaxHeld counts queued requests as the leases they wait for); the
// rate is a token bucket on each member. Zero is no limit.
type Quota struct {
	Namespace       string  `json:"namespace"`
	MaxHeld         uint32  `json:"max_held,omitempty"`
	MaxQueued       uint32  `json:"max_queued,omitempty"`
	ClientMaxHeld   uint32  `json:"client_max_held,omitempty"`
	ClientMaxQueued uint32  `json:"client_max_queued,omitempty"`
	AcquiresPerSec  float64 `json:"acquires_per_sec,omitempty"`
	Burst           int     `json:"burst,omitempty"`
	// DefaultGraceMs is the grace window (README "Grace window") an
	// acquire in the namespace gets when it asks for none (grace 0), cut
	// to its TTL.
	DefaultGraceMs uint32 `json:"default_grace,omitempty"`
}

// QuotaList is the reply of GET /acl/quotas.
type QuotaList struct {
	Quotas []Quota `json:"quotas"`
}

// ForceReleaseRequest names the resource whose holders are released.
type ForceReleaseRequest struct {
	Resource string `json:"resource"`
}

// ForceReleaseResponse counts the leases released.
type ForceReleaseResponse struct {
	Released int `json:"released"`
}
