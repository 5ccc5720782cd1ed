package service

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstep/lockstep/core/tracing"
)

// Config tunes the operations of one member, whichever front end serves
// them. A zero field takes DefaultConfig's value.
type Config struct {
	// RequestTimeout bounds the time to reach a leader and commit; a
	// blocking acquire gets its wait on top.
	RequestTimeout time.Duration
	// MaxInFlight bounds the API requests (acquire, release, renew, status,
	// cluster, ACL administration) served at once over every front end,
	// blocked acquires included; one more is refused at once as
	// overloaded (Admit). Probes, /metrics and watches are not counted.
	MaxInFlight int
	// ReadyLeaderContact is how recently a node must have heard from its
	// leader to be ready (Ready); with ACLs on, how recently the metadata
	// group's leader, for this member to check tokens at all.
	ReadyLeaderContact time.Duration
	// ReadyApplyLag is how many entries the applied index may trail the
	// leader's commit index while a node is ready (once it caught up).
	ReadyApplyLag uint64
	// ReadyTimeout bounds a readiness check's read-index round (asking each
	// shard's leader how far the log goes, and waiting to apply that far),
	// and the one a stale status read makes while this member has not
	// caught up yet.
	ReadyTimeout time.Duration
	// Logger gets a line per request (debug; warn when the server or the
	// outcome failed) and the operations' warnings. Nil discards them.
	Logger *slog.Logger
	// Collectors are extra series for the member's registry (its stage
	// timings).
	Collectors []prometheus.Collector
	// PeerTLS, when set, is the client side of a follower asking its
	// leader's API (GET /cluster) over HTTPS; nil: plain HTTP.
	PeerTLS *tls.Config
	// Tracer records a server span per API request (Observe); nil is off.
	Tracer *tracing.Tracer
	// Namespaces are the resource namespaces counted under their own label
	// in lockstep_namespace_requests_total; empty counts the first
	// NamespaceLimit seen. Any other namespace counts as "other".
	Namespaces     []string
	NamespaceLimit int
}

// DefaultConfig returns the defaults of every field.
func DefaultConfig() Config {
	return Config{
		RequestTimeout: 5 * time.Second,
		MaxInFlight:    10_000,
		// A follower hears from its leader every heartbeat (a tenth of the
		// heartbeat timeout); two seconds of silence means it is cut off.
		ReadyLeaderContact: 2 * time.Second,
		// A few Raft batches (up to 512 entries each) may sit between
		// commit and apply on a healthy, busy node.
		ReadyApplyLag: 4096,
		// Under a probe's usual 1 s timeout, with room for the reply.
		ReadyTimeout:   500 * time.Millisecond,
		Logger:         slog.New(slog.DiscardHandler),
		NamespaceLimit: 20,
	}
}

// WithDefaults returns c with every zero field set from DefaultConfig:
// the config New runs with.
func (c Config) WithDefaults() Config {
	def := DefaultConfig()
	if c.RequestTimeout == 0 {
		c.RequestTimeout = def.RequestTimeout
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = def.MaxInFlight
	}
	if c.ReadyLeaderContact == 0 {
		c.ReadyLeaderContact = def.ReadyLeaderContact
	}
	if c.ReadyApplyLag == 0 {
		c.ReadyApplyLag = def.ReadyApplyLag
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = def.ReadyTimeout
	}
	if c.Logger == nil {
		c.Logger = def.Logger
	}
	if c.NamespaceLimit == 0 {
		c.NamespaceLimit = def.NamespaceLimit
	}
	return c
}

// Validate reports every rule c breaks, one error each. New calls it on
// c.WithDefaults(), so there only a negative value is refused; a caller
// can do the same to refuse a config before starting anything.
func (c Config) Validate() error {
	var errs []error
	if c.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("RequestTimeout %s must be > 0", c.RequestTimeout))
	}
	if c.MaxInFlight <= 0 {
		errs = append(errs, fmt.Errorf("MaxInFlight %d must be > 0", c.MaxInFlight))
	}
	if c.ReadyLeaderContact <= 0 {
		errs = append(errs, fmt.Errorf("ReadyLeaderContact %s must be > 0", c.ReadyLeaderContact))
	}
	if c.ReadyTimeout <= 0 {
		errs = append(errs, fmt.Errorf("ReadyTimeout %s must be > 0", c.ReadyTimeout))
	}
	if c.NamespaceLimit <= 0 {
		errs = append(errs, fmt.Errorf("NamespaceLimit %d must be > 0", c.NamespaceLimit))
	}
	if c.Logger == nil {
		errs = append(errs, errors.New("Logger must be set"))
	}
	return errors.Join(errs...)
}
