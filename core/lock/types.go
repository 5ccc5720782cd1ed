package lock

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// Mode is the lock mode of a request or holder.
type Mode uint8

const (
	Exclusive Mode = iota + 1
	Shared
)

func (m Mode) String() string {
	switch m {
	case Exclusive:
		return "exclusive"
	case Shared:
		return "shared"
	default:
		return fmt.Sprintf("mode(%d)", uint8(m))
	}
}

// ParseMode maps the API spelling to a Mode; "" means exclusive.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "exclusive", "X", "x":
		return Exclusive, nil
	case "shared", "S", "s":
		return Shared, nil
	default:
		return 0, fmt.Errorf("%w: unknown mode %q (want exclusive or shared)", ErrInvalid, s)
	}
}

// Policy decides who gets a freed lock.
type Policy uint8

const (
	// FIFO queues waiters in the state machine and grants the head on free.
	FIFO Policy = iota
	// Throughput never queues: waiters race with fresh requests when the
	// lock frees (optimistic, unfair, one log entry fewer per handoff).
	Throughput
)

func (p Policy) String() string {
	if p == Throughput {
		return "throughput"
	}
	return "fifo"
}

// ParsePolicy maps the API spelling to a Policy; "" means FIFO.
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "", "fifo":
		return FIFO, nil
	case "throughput":
		return Throughput, nil
	default:
		return 0, fmt.Errorf("%w: unknown policy %q (want fifo or throughput)", ErrInvalid, s)
	}
}

// LeaseID names one grant (or one queued request that becomes a grant). It
// is 128 random bits chosen by the proposer and carried in the log entry, so
// apply stays deterministic while the ID stays unguessable.
type LeaseID [16]byte

// NewLeaseID draws a fresh random LeaseID.
func NewLeaseID() LeaseID {
	var id LeaseID
	if _, err := rand.Read(id[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // the runtime guarantees it never does
	}
	return id
}

func (id LeaseID) String() string { return hex.EncodeToString(id[:]) }

// IsZero reports whether id is the zero value (never a valid lease).
func (id LeaseID) IsZero() bool { return id == LeaseID{} }

// ParseLeaseID parses the 32-lowercase-hex-digit form produced by String,
// and only that: hex.Decode alone also takes upper case, and two byte
// strings must never name one lease.
func ParseLeaseID(s string) (LeaseID, error) {
	var id LeaseID
	if len(s) != 32 || strings.IndexFunc(s, notLowerHex) >= 0 {
		return id, fmt.Errorf("%w: lease_id must be 32 lowercase hex digits", ErrInvalid)
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, fmt.Errorf("%w: lease_id must be 32 lowercase hex digits", ErrInvalid)
	}
	if id.IsZero() {
		return id, fmt.Errorf("%w: lease_id must not be zero", ErrInvalid)
	}
	return id, nil
}

func notLowerHex(r rune) bool { return !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') }

// Op is the kind of a command in the log.
type Op uint8

const (
	OpAcquire Op = iota + 1
	OpRelease
	OpRenew
	// OpCancel removes a queued request (its wait elapsed or its caller left).
	OpCancel
	// OpTick only advances log time, expiring what is due.
	OpTick
	// OpStatus is a read that goes through the log, so it is linearizable.
	OpStatus
	// OpHello announces a node process (Host, Incarnation): queued requests
	// held by an earlier process of that node can never be answered, so
	// they are cancelled.
	OpHello
	// OpOrphan releases a grant its node could not deliver (the process
	// that held the request died before the grant was applied), unless the
	// client has claimed it since.
	OpOrphan
	// OpAcquireMany acquires every resource of Command.Resources (all on
	// this group) atomically: all are granted in one entry or none is; with
	// a wait the request enters every queue in one entry and is granted,
	// again in one entry, once it heads all of them (many.go).
	OpAcquireMany
)

func (o Op) String() string {
	switch o {
	case OpAcquire:
		return "acquire"
	case OpRelease:
		return "release"
	case OpRenew:
		return "renew"
	case OpCancel:
		return "cancel"
	case OpTick:
		return "tick"
	case OpStatus:
		return "status"
	case OpHello:
		return "hello"
	case OpOrphan:
		return "orphan"
	case OpAcquireMany:
		return "acquire_many"
	default:
		return fmt.Sprintf("op(%d)", uint8(o))
	}
}

// Command is one state machine input, as carried in a Raft log entry.
type Command struct {
	Op Op
	// Mono is the leader's monotonic clock reading (ns) when it proposed the
	// command. Together with the entry's term it drives log time.
	Mono      int64
	Resource  string
	ClientID  string
	RequestID string
	LeaseID   LeaseID
	Mode      Mode
	Policy    Policy
	// TTLMs is the lease length; on renew 0 keeps the lease's own TTL.
	TTLMs int64
	// WaitMs > 0 queues an acquire for that long; 0 is a try-lock.
	WaitMs int64
	// Owner is, on a cancel or an orphan release, the attempt giving up
	// (the LeaseID its acquire was proposed with): only the attempt whose
	// wait ends last removes a queued request, and only the owner of a
	// grant nobody claimed releases it. Zero acts unconditionally.
	Owner LeaseID
	// Host and Incarnation name the node process that holds the caller of
	// an acquire (and announce one in OpHello).
	Host        string
	Incarnation uint64
	// Suspects are the members the leader could not reach for a while when
	// it proposed the entry: a queued request they hold is cancelled
	// instead of granted, since nobody could be told.
	Suspects []string
	// CallerGone, on a cancel, says the attempt's caller left: a grant the
	// cancel finds is released as that attempt's orphan instead of being
	// reported (and so claimed).
	CallerGone bool
	// Deadlock, on a cancel, says it breaks a wait-for cycle: the waiter it
	// removes is answered Deadlock instead of a plain cancellation.
	Deadlock bool
	// Resources, on an OpAcquireMany, are its resources in request order
	// (1..MaxManyResources, distinct); Resource must then be empty. An
	// OpCancel naming a multi request carries the same list with LeaseID
	// the request's lease id (see ManyLeaseID). Every other op leaves it
	// empty.
	Resources []string
	// Quota, on an acquire, bounds its namespace's and client's usage
	// (quota.go); the proposer stamps it from the configured quotas.
	Quota Quota
	// GraceMs, on an acquire, keeps the resource unavailable that long
	// after the lease expires (not after a release); a renew within it
	// revives the lease with its token. 0 is none; at most TTLMs.
	GraceMs int64
	// Permits, on an acquire, makes the resource a semaphore of that many
	// exclusive holders (fixed at first use); 0 and 1 are a plain lock.
	Permits uint32
}

// MaxManyResources is the most resources one OpAcquireMany may name.
const MaxManyResources = 64

// ManyLeaseID is the lease id of resource i (its place in
// Command.Resources) of the multi request whose Command.LeaseID is base:
// base plus i in its low 64 bits. Deriving the ids keeps one random draw
// per request while every replica names every lease alike; resource 0's
// lease id is base itself.
func ManyLeaseID(base LeaseID, i int) LeaseID {
	id := base
	binary.BigEndian.PutUint64(id[8:], binary.BigEndian.Uint64(base[8:])+uint64(i))
	return id
}

// Entry is a command with the log position the state machine applies it at.
type Entry struct {
	Index uint64
	// Slot is the command's place in its log entry, which may carry many
	// (core/codec); 0 for the first or only one.
	Slot int
	// Term of the entry: only the leader of a term creates entries with that
	// term, so the pair (Term, Mono) is one clock.
	Term    uint64
	Command Command
}

// Lease describes one holder.
type Lease struct {
	ID        LeaseID
	ClientID  string
	Mode      Mode
	Token     uint64
	ExpiresAt int64 // log time, ns
	TTLMs     int64
	// GraceMs is the lease's grace window (grace.go), 0 for none.
	GraceMs int64
	// GraceUntil is, for a lease in its grace window (its TTL ran out at
	// ExpiresAt), the log time the window ends; 0 while the lease is held.
	GraceUntil int64
}

// InGrace reports whether the lease's TTL ran out and it waits in its
// grace window: nobody else may be granted it, yet it is no valid holder.
func (l Lease) InGrace() bool { return l.GraceUntil != 0 }

// Waiter describes one queued request.
type Waiter struct {
	ID       LeaseID
	ClientID string
	Mode     Mode
	Deadline int64 // log time, ns
}

// Status is the view of one resource.
type Status struct {
	Resource string
	Holders  []Lease
	Queue    []Waiter
	// Permits is a semaphore's N (semaphore.go), 0 for a plain lock.
	Permits uint32
}

// Result is what applying one command answered.
//
// For an OpAcquireMany (and a cancel naming one): Granted means every
// resource was granted and Leases holds one lease per resource in request
// order (Lease is Leases[0]); LeaseEnded also lists the leases the request
// was granted. Queued means the request waits in every queue: Lease.ID is
// the request's lease id and Position its place in the queue where it
// stands furthest back. Neither granted nor queued, Blocked names the first
// resource (in request order) that kept it from being granted now; with
// QueueFull or TooManyLocks it names the resource that hit the limit.
type Result struct {
	Code    Code
	Granted bool
	// Queued is set when an acquire (or a retried one) waits in the queue.
	Queued bool
	// Position is the 1-based queue position of a queued or cancelled request.
	Position int
	Lease    Lease
	LogTime  int64
	// Status is an OpStatus's answer; on a single acquire's
	// PermitsMismatch, the resource with only its Permits, to say what
	// it is.
	Status *Status
	// Leases are a multi request's grants, in request order.
	Leases []Lease
	// Blocked is the resource that kept a multi request from being
	// granted; on QuotaExceeded, the limit the request would pass
	// (LimitHeld, ...), so the refusal can name its quota.
	Blocked string
	// Cycle, on Deadlock, is the wait-for cycle the request would have
	// closed, by client id: the requester, then each client the one
	// before it waits for; the last waits for the requester.
	Cycle []string
}

// EventKind classifies state machine events.
type EventKind uint8

const (
	EventEnqueue EventKind = iota + 1
	EventGrant
	EventRelease
	EventExpire
	EventCancel
	EventRenew
	// EventFreed says a resource lost all holders with nobody queued, or
	// a semaphore a permit with nobody queued: in throughput mode this
	// wakes the racers.
	EventFreed
	// EventJoin says a retry of a queued request joined its wait and moved
	// its deadline (Lease.ExpiresAt) later.
	EventJoin
	// EventGrace says a lease with a grace window outlived its TTL: it
	// holds nothing now, yet blocks the resource until Lease.GraceUntil;
	// EventRevive (a renew in the window), EventRelease or EventExpire
	// (the window ended) follows.
	EventGrace
	// EventRevive says a renew in the grace window revived the lease, with
	// its token, until the new Lease.ExpiresAt.
	EventRevive
)

func (k EventKind) String() string {
	switch k {
	case EventEnqueue:
		return "enqueue"
	case EventGrant:
		return "grant"
	case EventRelease:
		return "release"
	case EventExpire:
		return "expire"
	case EventCancel:
		return "cancel"
	case EventRenew:
		return "renew"
	case EventFreed:
		return "freed"
	case EventJoin:
		return "join"
	case EventGrace:
		return "grace"
	case EventRevive:
		return "revive"
	default:
		return fmt.Sprintf("event(%d)", uint8(k))
	}
}

// Event is one change applied to a resource. On enqueue and join events
// Lease.ExpiresAt is the queued request's deadline (log time). Events are produced in a
// deterministic order, so every replica emits the same sequence.
type Event struct {
	Kind  EventKind
	Index uint64
	// Slot is the place in its log entry of the command that caused the
	// event (Entry.Slot): Index and Slot together name that command.
	Slot     int
	LogTime  int64
	Resource string
	Lease    Lease
	// Queued marks a grant made to a queued waiter (not the command itself).
	Queued bool
	// Hosts, on queued grants, are the node processes whose attempts
	// waited for the request (see Command.Owner).
	Hosts []string
	// Many, on the enqueue, join, cancel and grant events of a multi
	// request, is the request's lease id (Command.LeaseID of its
	// OpAcquireMany), and ManySize its number of resources: a checker ties
	// the per-resource events of one request together by them. Zero for
	// single-resource requests.
	Many     LeaseID
	ManySize int
	// Permits, on a grant, is the N of the semaphore granted a permit; 0
	// for a plain lock.
	Permits uint32
	// Deadlock, on a cancel event, says the request was removed to break
	// a wait-for cycle across groups (Command.Deadlock): its callers are
	// answered Deadlock.
	Deadlock bool
}
