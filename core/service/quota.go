package service

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/lock"
)

// errRateLimited marks an acquire refused by its namespace's rate.
var errRateLimited = errors.New("acquire rate limit")

// rateLimitedError says when the namespace's bucket has a token again.
type rateLimitedError struct {
	namespace string
	wait      time.Duration
}

func (e *rateLimitedError) Error() string {
	return fmt.Sprintf("%v: namespace %q is over its acquires_per_sec on this member; retry in %s", errRateLimited, e.namespace, e.wait.Round(time.Millisecond))
}

func (e *rateLimitedError) Unwrap() error { return errRateLimited }

// RetryAfter is when to retry after a resource_exhausted error, as a
// Retry-After value: whole seconds, at least 1 (a namespace's rate says
// when its bucket has a token again; any other bound, 1).
func RetryAfter(err error) string {
	var rl *rateLimitedError
	if errors.As(err, &rl) {
		return strconv.Itoa(max(1, int(math.Ceil(rl.wait.Seconds()))))
	}
	return "1"
}

// quotaExceeded names, in err (a node.ErrQuotaExceeded), the quota
// limit the state machine reported (lock.Result.Blocked) for an acquire
// of namespace ns by client under q, the limits stamped into it: which
// count, whose, and its value, in the words of the quota API.
func quotaExceeded(err error, limit, ns, client string, q lock.Quota) error {
	var who, name string
	var value uint32
	switch limit {
	case lock.LimitHeld:
		who, name, value = fmt.Sprintf("namespace %q", ns), "max_held", q.Held
	case lock.LimitQueued:
		who, name, value = fmt.Sprintf("namespace %q", ns), "max_queued", q.Queued
	case lock.LimitClientHeld:
		who, name, value = fmt.Sprintf("client %q in namespace %q", client, ns), "client_max_held", q.ClientHeld
	case lock.LimitClientQueued:
		who, name, value = fmt.Sprintf("client %q in namespace %q", client, ns), "client_max_queued", q.ClientQueued
	default:
		return err // a leader that does not name its limit yet
	}
	counts := "leases and queued requests count"
	if name == "max_queued" || name == "client_max_queued" {
		counts = "queued requests count"
	}
	return fmt.Errorf("%w: %s is at its %s of %d (%s, per lock shard); nothing changed", err, who, name, value, counts)
}

// admitAcquire checks an acquire of resources, authorized already, against
// its namespaces' quotas before it is proposed: it spends one of each
// namespace's acquires per second, and stamps the namespace's held and
// queued limits into cmd for the state machine to enforce exactly, and its
// default grace window when cmd asks for none (defaultGrace).
func (s *Service) admitAcquire(cmd *lock.Command, resources ...string) error {
	p := s.policy()
	if p == nil || len(p.Quotas) == 0 {
		return nil
	}
	var quotas []acl.Quota
	namespaces := map[string]bool{}
	// An acquire_many over several namespaces gets the longest default.
	askedGrace := cmd.GraceMs != 0
	for _, r := range resources {
		ns := lock.Namespace(r)
		if namespaces[ns] {
			continue
		}
		namespaces[ns] = true
		if q, ok := p.Quota(ns); ok {
			quotas = append(quotas, q)
			if !askedGrace {
				cmd.GraceMs = max(cmd.GraceMs, defaultGrace(q, cmd.TTLMs))
			}
			if !q.Limits().IsZero() {
				cmd.Quota = q.Limits()
			}
		}
	}
	if !cmd.Quota.IsZero() && len(namespaces) > 1 {
		return fmt.Errorf("%w: an acquire_many may span namespaces only if none has held or queued quotas", lock.ErrInvalid)
	}
	for _, q := range quotas {
		if err := s.rates.take(q, time.Now()); err != nil {
			return err
		}
	}
	return nil
}

// defaultGrace is the grace window an acquire of ttlMs asking for none
// gets in a namespace with quota q: its default, cut to the TTL.
func defaultGrace(q acl.Quota, ttlMs int64) int64 {
	return min(int64(q.DefaultGraceMs), ttlMs)
}

// rates are the acquire token buckets of this member, by namespace: a
// leader-independent, per-member approximation (N members may together
// admit up to N times the rate).
type rates struct {
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	perSec, burst float64
	tokens        float64
	last          time.Time
}

// take spends one acquire of q's namespace, or says how long to wait.
func (r *rates) take(q acl.Quota, now time.Time) error {
	if q.AcquiresPerSec <= 0 {
		return nil
	}
	burst := float64(q.Burst)
	if burst <= 0 {
		burst = max(1, math.Ceil(q.AcquiresPerSec))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.buckets == nil {
		r.buckets = map[string]*bucket{}
	}
	b := r.buckets[q.Namespace]
	if b == nil || b.perSec != q.AcquiresPerSec || b.burst != burst {
		b = &bucket{perSec: q.AcquiresPerSec, burst: burst, tokens: burst, last: now}
		r.buckets[q.Namespace] = b
	}
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.perSec)
	b.last = now
	if b.tokens < 1 {
		return &rateLimitedError{namespace: q.Namespace, wait: time.Duration((1 - b.tokens) / b.perSec * float64(time.Second))}
	}
	b.tokens--
	return nil
}
