package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lockstep/lockstep/core/ctxtime"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/placement"
)

// HTTP client limits. A request never outlives its wait by more than
// requestSlack, and a 503 is retried at most maxAttempts times with capped
// exponential backoff, so a dead cluster costs a bounded time per call.
const (
	requestSlack    = 10 * time.Second
	discoverTimeout = time.Second
	maxAttempts     = 10
	backoffMin      = 5 * time.Millisecond
	backoffMax      = 250 * time.Millisecond
	maxBodyBytes    = 1 << 20
)

// HTTPLockerOptions configures an HTTPLocker.
type HTTPLockerOptions struct {
	// URLs of the nodes ("http://127.0.0.1:7070"); requests go to the
	// leader of the resource's shard named by GET /cluster on any of them
	// (the metadata group's leader when the reply lists no shards).
	URLs     []string
	ClientID string
	Policy   api.Policy
	// MaxIdleConnsPerHost sizes the keep-alive pool of this client's own
	// transport.
	MaxIdleConnsPerHost int
	// Spread sends each request to the next URL in turn, as a load
	// balancer in front of the members would (or, with one URL, through a
	// gateway), instead of to the leader /cluster names.
	Spread bool
	// LeaderRefresh is how long discovered leaders are trusted before
	// /cluster is asked again (default 1 s): members move shard leaders
	// to spread them, and a moved leader still answers, by forwarding.
	LeaderRefresh time.Duration
}

// HTTPLocker speaks the lockstep HTTP/JSON API (package api). It serves both
// the lockstep cluster and the bare baseline server.
type HTTPLocker struct {
	opts      HTTPLockerOptions
	transport *http.Transport
	client    *http.Client

	mu sync.Mutex
	// leaders[i] is the base URL of the node believed to lead shard i+1
	// ("" while unknown); nil = rediscover. found is when they were.
	leaders []string
	found   time.Time
	next    int // rotation over opts.URLs for discovery
}

var _ Locker = (*HTTPLocker)(nil)

// NewHTTPLocker returns a client with its own connection pool.
func NewHTTPLocker(opts HTTPLockerOptions) (*HTTPLocker, error) {
	if len(opts.URLs) == 0 {
		return nil, errors.New("http locker: no node URLs")
	}
	if opts.ClientID == "" {
		return nil, errors.New("http locker: empty client id")
	}
	opts.URLs = append([]string(nil), opts.URLs...)
	for i, u := range opts.URLs {
		opts.URLs[i] = normalizeBaseURL(u)
	}
	if opts.MaxIdleConnsPerHost <= 0 {
		opts.MaxIdleConnsPerHost = 16
	}
	if opts.LeaderRefresh <= 0 {
		opts.LeaderRefresh = time.Second
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        opts.MaxIdleConnsPerHost * len(opts.URLs),
		MaxIdleConnsPerHost: opts.MaxIdleConnsPerHost,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &HTTPLocker{opts: opts, transport: tr, client: &http.Client{Transport: tr}}, nil
}

// normalizeBaseURL turns "host:port" or "http://host:port/" into
// "http://host:port".
func normalizeBaseURL(s string) string {
	s = strings.TrimRight(strings.TrimSpace(s), "/")
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	return s
}

// Acquire implements Locker. One request id is reused across 503 retries so
// the server's dedupe table can recognise a retried proposal.
func (l *HTTPLocker) Acquire(ctx context.Context, req AcquireRequest) (Grant, error) {
	body := api.AcquireRequest{
		Resource:  req.Key,
		ClientID:  l.opts.ClientID,
		TTLMs:     req.TTL.Milliseconds(),
		Mode:      req.Mode,
		WaitMs:    req.Wait.Milliseconds(),
		RequestID: newRequestID(),
		Policy:    l.opts.Policy,
	}
	ctx, cancel := context.WithTimeout(ctx, req.Wait+requestSlack)
	defer cancel()
	var resp api.AcquireResponse
	if err := l.call(ctx, api.PathAcquire, req.Key, body, &resp); err != nil {
		return Grant{}, fmt.Errorf("acquire %s: %w", req.Key, err)
	}
	if !resp.Granted {
		return Grant{Key: req.Key}, nil
	}
	return Grant{Granted: true, Key: req.Key, Lease: resp.LeaseID, Token: resp.FencingToken}, nil
}

// Release implements Locker.
func (l *HTTPLocker) Release(ctx context.Context, g Grant) error {
	ctx, cancel := context.WithTimeout(ctx, requestSlack)
	defer cancel()
	var resp api.ReleaseResponse
	if err := l.call(ctx, api.PathRelease, g.Key, api.ReleaseRequest{Resource: g.Key, LeaseID: g.Lease}, &resp); err != nil {
		return fmt.Errorf("release %s: %w", g.Key, err)
	}
	if !resp.Released {
		return fmt.Errorf("release %s: %w", g.Key, ErrNotHolder)
	}
	return nil
}

// Close implements Locker.
func (l *HTTPLocker) Close() error {
	l.transport.CloseIdleConnections()
	return nil
}

// call POSTs in to resource's leader and decodes a 200 body into out,
// retrying on 503 and on transport failures (the node may be down or not
// leading).
func (l *HTTPLocker) call(ctx context.Context, path, resource string, in, out any) error {
	payload, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	backoff := backoffMin
	var last error
	for range maxAttempts {
		base := l.target(ctx, resource)
		last = l.post(ctx, base+path, payload, out)
		if last == nil {
			return nil
		}
		if !retryable(last) || expired(ctx) {
			return last
		}
		l.forgetLeader(base)
		if err := ctxtime.Sleep(ctx, backoff); err != nil {
			return fmt.Errorf("%w (gave up: %w)", last, err)
		}
		backoff = min(2*backoff, backoffMax)
	}
	return fmt.Errorf("after %d attempts: %w", maxAttempts, last)
}

// retryable reports whether another node (or the same one later) may
// succeed where this attempt failed.
func retryable(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrTransport)
}

// post does one request and maps the outcome onto the error classes.
func (l *HTTPLocker) post(ctx context.Context, url string, payload []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.client.Do(req)
	if err != nil {
		if expired(ctx) {
			return context.DeadlineExceeded
		}
		return fmt.Errorf("%w: %w", ErrTransport, err)
	}
	defer drainClose(resp.Body)
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxBodyBytes))
	if resp.StatusCode == http.StatusOK {
		if err := dec.Decode(out); err != nil {
			return fmt.Errorf("%w: decode reply: %w", ErrTransport, err)
		}
		return nil
	}
	var apiErr api.Error
	_ = dec.Decode(&apiErr) // a non-JSON error body still has a status to classify
	return fmt.Errorf("%w: HTTP %d %s: %s", classifyStatus(resp.StatusCode, apiErr.Code), resp.StatusCode, apiErr.Code, apiErr.Error)
}

// classifyStatus maps an HTTP error reply onto an error class.
func classifyStatus(status int, code api.Code) error {
	switch {
	case code == api.CodeNotHolder || status == http.StatusConflict:
		return ErrNotHolder
	case code == api.CodeUnavailable || status == http.StatusServiceUnavailable:
		return ErrUnavailable
	case status >= 400 && status < 500:
		return ErrRejected
	default:
		return ErrServer
	}
}

// target is where the next request goes: the next URL in turn when
// spreading, else the leader of resource's shard.
func (l *HTTPLocker) target(ctx context.Context, resource string) string {
	if !l.opts.Spread {
		return l.leaderURL(ctx, resource)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	base := l.opts.URLs[l.next]
	l.next = (l.next + 1) % len(l.opts.URLs)
	return base
}

// leaderURL returns the cached leader of resource's shard, discovering the
// leaders if needed. When no node names one it falls back to the next URL
// in rotation; the 503 retry loop then keeps looking.
func (l *HTTPLocker) leaderURL(ctx context.Context, resource string) string {
	l.mu.Lock()
	leaders := l.leaders
	stale := leaders == nil || time.Since(l.found) >= l.opts.LeaderRefresh
	start := l.next
	if stale {
		l.next = (l.next + 1) % len(l.opts.URLs)
	}
	l.mu.Unlock()

	for i := 0; stale && i < len(l.opts.URLs); i++ {
		if found, err := l.discover(ctx, l.opts.URLs[(start+i)%len(l.opts.URLs)]); err == nil && found != nil {
			l.mu.Lock()
			l.leaders, l.found = found, time.Now()
			l.mu.Unlock()
			leaders, stale = found, false
		}
	}
	if len(leaders) == 0 {
		return l.opts.URLs[start]
	}
	if base := leaders[placement.Of(resource, len(leaders))-1]; base != "" {
		return base
	}
	return l.opts.URLs[start]
}

// forgetLeader drops the cached leaders if base is one of them.
func (l *HTTPLocker) forgetLeader(base string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if slices.Contains(l.leaders, base) {
		l.leaders = nil
	}
}

// discover asks one node who leads each shard and returns the leaders'
// base URLs by shard (nil when nobody is known to lead).
func (l *HTTPLocker) discover(ctx context.Context, base string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, discoverTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+api.PathCluster, nil)
	if err != nil {
		return nil, err
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTransport, err)
	}
	defer drainClose(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: cluster: HTTP %d", ErrUnavailable, resp.StatusCode)
	}
	var cr api.ClusterResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBodyBytes)).Decode(&cr); err != nil {
		return nil, fmt.Errorf("%w: decode cluster: %w", ErrTransport, err)
	}
	return shardLeaders(cr), nil
}

// shardLeaders lists the shards' leaders by shard id ("" for a shard with
// none known). When the reply lists no shards (the bare server) or names no
// shard leader, it is the one leader the reply names, which forwards; nil
// when there is none.
func shardLeaders(cr api.ClusterResponse) []string {
	var meta []string
	if leader := leaderBaseURL(cr); leader != "" {
		meta = []string{leader}
	}
	leaders := make([]string, len(cr.Shards))
	known := false
	for _, s := range cr.Shards {
		if s.ID < 1 || s.ID > len(leaders) {
			return meta
		}
		if s.LeaderHTTP != "" {
			leaders[s.ID-1] = normalizeBaseURL(s.LeaderHTTP)
			known = true
		}
	}
	if !known {
		return meta
	}
	return leaders
}

// leaderBaseURL finds the leader's HTTP address in a cluster reply. The
// contract does not say whether Leader is a node id or an address, so both
// are accepted; a bare address is used only when no node list came with it,
// since it could be a Raft address rather than an HTTP one.
func leaderBaseURL(cr api.ClusterResponse) string {
	if cr.Leader == "" {
		return ""
	}
	for _, n := range cr.Nodes {
		if (n.ID == cr.Leader || n.HTTPAddr == cr.Leader || n.RaftAddr == cr.Leader) && n.HTTPAddr != "" {
			return normalizeBaseURL(n.HTTPAddr)
		}
	}
	if len(cr.Nodes) == 0 && strings.Contains(cr.Leader, ":") {
		return normalizeBaseURL(cr.Leader)
	}
	return ""
}

// newRequestID returns 16 random hex characters.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// drainClose empties a body (bounded) so the connection can be reused.
func drainClose(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxBodyBytes))
	_ = body.Close()
}
