// Package client is the Go client library of lockstep. It speaks the
// HTTP/JSON contract of package api, retries transient failures across all
// endpoints with idempotent request ids, and judges lease validity
// conservatively on the client's own monotonic clock.
//
// Validity counts from the send of the request that granted or last renewed
// the lease, never from the reply: the server may have applied it at any
// moment in between. After an acquire that waited in the queue, that send
// can lie so far back that little or no validity is left, so Acquire then
// renews once and counts from the renew (see AcquireOptions).
package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockstep/lockstep/core/shardmap"
)

// Defaults applied by New to zero Config fields.
const (
	defaultBackoffBase    = 50 * time.Millisecond
	defaultBackoffMax     = 2 * time.Second
	defaultMaxAttempts    = 8
	defaultAttemptTimeout = 5 * time.Second
	// defaultMarginMax caps the default safety margin of 10% of expires_in:
	// long leases do not need a proportionally long margin for clock drift.
	defaultMarginMax = time.Second
	// maxEndpoints bounds the endpoint list (a cluster is a handful of nodes).
	maxEndpoints = 64
	// routesMaxAge is how old the shard map may get before a call fetches
	// it again: leaders move without any request failing, and the client
	// runs no periodic refresh.
	routesMaxAge = 2 * time.Second
)

// Config configures a Client. Zero fields take the documented defaults.
type Config struct {
	// Endpoints are base URLs of lockstep nodes, e.g. http://127.0.0.1:7070.
	// Any node accepts any request; the client rotates through all of them,
	// but sends a request to its shard's leader first when the shard map
	// it caches from GET /cluster names one (no forward hop).
	Endpoints []string
	// ClientID identifies this client to the server, both as lock holder and
	// for request dedupe. Empty: a random 128-bit hex id.
	ClientID string
	// HTTPClient sends requests. Nil: a fresh http.Client. Leave its Timeout
	// at zero: per-attempt bounds come from AttemptTimeout and the acquire wait.
	HTTPClient *http.Client
	// TLS configures the https endpoints: the CA that signs the members'
	// certificates and, when the cluster requires one, the client
	// certificate (tlsconf.Client builds it). Only with a nil HTTPClient;
	// give an HTTPClient its own transport's TLS instead.
	TLS *tls.Config
	// BackoffBase and BackoffMax shape the retry delay: uniform in
	// [0, min(BackoffMax, BackoffBase·2^retry)] ("full jitter").
	// Defaults 50ms and 2s.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// MaxAttempts bounds the HTTP attempts of one call (first try included).
	// Default 8.
	MaxAttempts int
	// AttemptTimeout bounds one HTTP attempt on top of the acquire wait it
	// carries, so a black-holed node costs one attempt. Default 5s.
	AttemptTimeout time.Duration
	// SafetyMargin is subtracted from every expires_in the server grants to
	// absorb clock-rate drift between client and server. Zero selects the
	// default, 10% of expires_in capped at 1s; a zero margin is not offered.
	SafetyMargin time.Duration
	// Now reads the clock used to judge lease validity and remaining wait.
	// Nil: time.Now (monotonic). Timers (keep-alive, expiry, backoff) run on
	// the runtime clock; tests of them use testing/synctest.
	Now func() time.Time
	// Logger receives retry and lease-loss events. Nil: discard.
	Logger *slog.Logger
	// DisableShardRouting sends every request to the endpoints in turn and
	// never fetches the shard map (which runs in the background: tests in a
	// synctest bubble cannot have it outlive them).
	DisableShardRouting bool
	// Token is the bearer token sent with every request (Authorization:
	// Bearer), for clusters with ACLs on. Empty: none.
	Token string
	// Rand, when set, is the only source of the client's randomness (ids
	// and retry jitter), so a simulation replays from its seed. Nil:
	// crypto/rand ids and runtime jitter. The client serialises its use.
	Rand *rand.Rand
}

// Client talks to a lockstep cluster. It is safe for concurrent use.
// Close it when done: it stops keep-alives and background map fetches.
type Client struct {
	endpoints      []string
	clientID       string
	http           *http.Client
	backoff        backoff
	maxAttempts    int
	attemptTimeout time.Duration
	safetyMargin   time.Duration
	now            func() time.Time
	log            *slog.Logger
	entropy        *entropy
	// preferred is the index of the endpoint that answered last; calls start
	// there so a dead node is skipped once, not on every call.
	preferred atomic.Uint32
	// routes caches the shard map, to send each request to its shard's
	// leader first (no forward hop), and picks each attempt's endpoint.
	routes *shardmap.Cache
	// token is Config.Token.
	token string
	// bg is the background work Close stops (close.go).
	bg background
}

// New validates cfg, applies defaults and returns a Client.
func New(cfg Config) (*Client, error) {
	endpoints, err := parseEndpoints(cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	if cfg.BackoffBase < 0 || cfg.BackoffMax < 0 || cfg.AttemptTimeout < 0 || cfg.SafetyMargin < 0 {
		return nil, errors.New("lockstep: negative duration in client config")
	}
	if cfg.MaxAttempts < 0 {
		return nil, errors.New("lockstep: MaxAttempts must not be negative")
	}
	if cfg.TLS != nil && cfg.HTTPClient != nil {
		return nil, errors.New("lockstep: TLS and HTTPClient both set; configure TLS on the HTTPClient's transport")
	}
	ent := &entropy{seed: cfg.Rand}
	c := &Client{
		entropy:        ent,
		endpoints:      endpoints,
		clientID:       cfg.ClientID,
		http:           cfg.HTTPClient,
		backoff:        newBackoff(orDefault(cfg.BackoffBase, defaultBackoffBase), orDefault(cfg.BackoffMax, defaultBackoffMax), ent.int64N),
		maxAttempts:    orDefault(cfg.MaxAttempts, defaultMaxAttempts),
		attemptTimeout: orDefault(cfg.AttemptTimeout, defaultAttemptTimeout),
		safetyMargin:   cfg.SafetyMargin,
		now:            cfg.Now,
		log:            cfg.Logger,
		token:          cfg.Token,
	}
	if c.backoff.max < c.backoff.base {
		return nil, fmt.Errorf("lockstep: BackoffMax %v below BackoffBase %v", c.backoff.max, c.backoff.base)
	}
	if c.clientID == "" {
		c.clientID = ent.id()
	}
	if c.http == nil {
		tr := newTransport()
		if cfg.TLS != nil {
			tr.TLSClientConfig = cfg.TLS.Clone()
		}
		c.http = &http.Client{Transport: tr}
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.log = c.log.With("client_id", c.clientID)
	rc := shardmap.DefaultConfig()
	rc.Seeds, rc.MaxAge, rc.Logger = endpoints, routesMaxAge, c.log
	if !cfg.DisableShardRouting {
		rc.Fetch = c.fetchView
	}
	if c.routes, err = shardmap.New(rc); err != nil {
		return nil, fmt.Errorf("lockstep: %w", err)
	}
	c.bg.closing, c.bg.close = context.WithCancel(context.Background())
	return c, nil
}

// ID returns the client id sent with every acquire.
func (c *Client) ID() string { return c.clientID }

// idleConnsPerNode is how many idle keep-alive connections the default
// transport keeps per node. http.DefaultTransport keeps 2: when many
// replies came back together (one commit answers a batch) to callers that
// did some work before their next call, a shared client closed all but two
// of those connections and dialled again (271 dials for 320 requests of 16
// callers in TestSharedClientKeepsConnections, 16 with this).
const idleConnsPerNode = 64

func newTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = idleConnsPerNode
	return tr
}

// parseEndpoints checks that every endpoint is an absolute http(s) URL and
// strips trailing slashes so paths can be appended.
func parseEndpoints(raw []string) ([]string, error) {
	if len(raw) == 0 {
		return nil, errors.New("lockstep: no endpoints")
	}
	if len(raw) > maxEndpoints {
		return nil, fmt.Errorf("lockstep: %d endpoints exceed the limit of %d", len(raw), maxEndpoints)
	}
	out := make([]string, 0, len(raw))
	for _, e := range raw {
		u, err := url.Parse(e)
		if err != nil {
			return nil, fmt.Errorf("lockstep: endpoint %q: %w", e, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("lockstep: endpoint %q is not an http(s) base URL", e)
		}
		out = append(out, strings.TrimRight(e, "/"))
	}
	return out, nil
}

// orDefault returns v, or def when v is the zero value.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// margin is the safety margin subtracted from a granted expiresIn.
func (c *Client) margin(expiresIn time.Duration) time.Duration {
	if c.safetyMargin > 0 {
		return c.safetyMargin
	}
	return min(expiresIn/10, defaultMarginMax)
}

// validUntil is the conservative end of validity for a grant of expiresInMs
// whose request was first sent at sent: the server started counting no
// earlier than that, so the lease cannot have expired before this instant
// (modulo drift, which the margin absorbs).
func (c *Client) validUntil(sent time.Time, expiresInMs int64) time.Time {
	expiresIn := msDuration(expiresInMs)
	return sent.Add(expiresIn - c.margin(expiresIn))
}

// msDuration converts a wire duration in milliseconds.
func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
