// Package service is the API of one lockstep member, whichever front end
// carries it (core/server: HTTP/JSON, core/grpcapi: gRPC): the operations
// (acquire, acquire_many, release, renew, status, fence, validate, watch, the
// cluster view, readiness, ACL administration), who may run them
// (authorisation, quotas), how many run at once (admission), what each
// costs (observation: spans, request logs, namespace counts, the member's
// metric registry) and what their errors mean (Classify: the API error
// classes). Each operation validates its request, runs it on the
// resource's shard within the request deadline and answers in the core/api
// types. A front end only decodes requests and encodes answers.
package service

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstep/lockstep/core/shard"
	"github.com/lockstep/lockstep/core/tracing"
)

// leaderViewTimeout bounds a follower's fetch of the leader's view (Cluster).
const leaderViewTimeout = time.Second

// Service runs the API operations of the member host: every request goes
// to the lock shard of its resource, on this member (which forwards it to
// that shard's leader).
type Service struct {
	host *shard.Host
	cfg  Config
	// registry holds every series of the member; front ends add theirs
	// and serve it (Registry).
	registry *prometheus.Registry
	// inFlight holds one token per admitted request (Admit).
	inFlight chan struct{}
	// rates are the namespaces' acquire buckets (quota.go).
	rates rates
	// namespaces counts requests per resource namespace (observe.go).
	namespaces *namespaceCounter
	// spanNames caches "lockstep <op>" per op (observe.go).
	spanNames sync.Map
	// peers fetches the leader's view for Cluster on a follower, at
	// peerScheme ("http" or "https").
	peers      *http.Client
	peerScheme string
	// watchesEnd is closed by EndWatches (watch.go).
	watchesEnd chan struct{}
	endOnce    sync.Once
}

// New builds the API of the member h. Zero fields of cfg take
// DefaultConfig's values; a config Validate refuses is an error. Each
// service has its own metric registry, so several members can share one
// process (lockd dev).
func New(h *shard.Host, cfg Config) (*Service, error) {
	if h == nil {
		return nil, errors.New("service: nil host")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("service config: %w", err)
	}
	s := &Service{
		host: h, cfg: cfg, registry: prometheus.NewRegistry(),
		inFlight:   make(chan struct{}, cfg.MaxInFlight),
		peers:      &http.Client{Timeout: leaderViewTimeout},
		peerScheme: "http",
		watchesEnd: make(chan struct{}),
	}
	if cfg.PeerTLS != nil {
		s.peers.Transport = &http.Transport{TLSClientConfig: cfg.PeerTLS}
		s.peerScheme = "https"
	}
	if err := s.register(); err != nil {
		return nil, err
	}
	return s, nil
}

// Config is the configuration the service runs with, defaults filled in.
func (s *Service) Config() Config { return s.cfg }

// Registry is the member's metric registry: the series of the service
// and of its shards. A front end registers its own series in it and
// serves it (GET /metrics), so every front end reports into one registry.
func (s *Service) Registry() *prometheus.Registry { return s.registry }

// Tracer is the tracer of the service's spans; a front end extracts the
// caller's trace context with it before Observe. Nil is off.
func (s *Service) Tracer() *tracing.Tracer { return s.cfg.Tracer }

// NodeID is the id of the member the service runs on.
func (s *Service) NodeID() string { return s.host.ID() }

// MapVersion is the version of the shard map this member routes by, 0
// for a member without a metadata group (a single-group test host). Front
// ends stamp it on their replies, so a router holding an older map
// refreshes it.
func (s *Service) MapVersion() uint64 { return s.host.MapVersion() }

// deadline bounds a request: RequestTimeout plus any queue wait.
func (s *Service) deadline(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.RequestTimeout+wait)
}
