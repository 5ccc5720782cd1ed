package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// lockdReadyTimeout bounds how long a spawned `lockd dev` may take to elect.
const lockdReadyTimeout = 30 * time.Second

// DefaultLockdURLs are the HTTP addresses of `lockd dev`.
var DefaultLockdURLs = []string{"http://127.0.0.1:7070", "http://127.0.0.1:7071", "http://127.0.0.1:7072"}

// httpTarget is any service speaking the lockstep HTTP API.
type httpTarget struct {
	name   string
	traits Traits
	urls   []string
	// maxIdle sizes each client's keep-alive pool.
	maxIdle int
	// spread: see HTTPLockerOptions.Spread.
	spread bool
	stop   func() error
}

var _ Target = (*httpTarget)(nil)

func (t *httpTarget) Name() string   { return t.name }
func (t *httpTarget) Traits() Traits { return t.traits }

func (t *httpTarget) NewLocker(_ context.Context, cfg ClientConfig) (Locker, error) {
	return NewHTTPLocker(HTTPLockerOptions{URLs: t.urls, ClientID: cfg.ID, Policy: cfg.Policy, MaxIdleConnsPerHost: t.maxIdle, Spread: t.spread})
}

func (t *httpTarget) Close() error { return t.stop() }

// lockServerTraits: lockstep and the bare server implement the full API.
var lockServerTraits = Traits{Fencing: true, Queue: true, Shared: true, Policies: true}

// NewBareTarget starts a BareServer and targets it.
func NewBareTarget() (Target, error) {
	srv, err := NewBareServer()
	if err != nil {
		return nil, err
	}
	return &httpTarget{name: "bare", traits: lockServerTraits, urls: []string{srv.URL()}, maxIdle: 4, stop: srv.Close}, nil
}

// LockstepOptions says where the lockstep cluster is.
type LockstepOptions struct {
	// URLs of running nodes; DefaultLockdURLs when empty.
	URLs []string
	// Spawn, when set, is a lockd binary started as `lockd dev` for the
	// life of the target (its log goes to LogDir/lockd.log).
	Spawn  string
	LogDir string
	// Spread sends requests to the URLs in turn instead of to the leader
	// (see HTTPLockerOptions.Spread).
	Spread bool
}

// NewLockstepTarget targets a lockstep cluster, starting one first if asked,
// and waits until some node names a leader.
func NewLockstepTarget(ctx context.Context, opts LockstepOptions) (Target, error) {
	urls := opts.URLs
	if len(urls) == 0 {
		urls = DefaultLockdURLs
	}
	t := &httpTarget{name: "lockstep", traits: lockServerTraits, urls: urls, maxIdle: 4, spread: opts.Spread,
		stop: func() error { return nil }}
	var exited <-chan struct{} // nil (never ready) unless we own the process
	if opts.Spawn != "" {
		c, err := startChild(childOptions{Path: opts.Spawn, Args: []string{"dev"}, LogPath: filepath.Join(opts.LogDir, "lockd.log")})
		if err != nil {
			return nil, fmt.Errorf("spawn lockd: %w", err)
		}
		t.stop = func() error { return c.Stop(10 * time.Second) }
		exited = c.Exited()
	}
	if err := waitForLeader(ctx, urls, exited); err != nil {
		_ = t.stop()
		return nil, err
	}
	return t, nil
}

// waitForLeader polls GET /cluster until a node names a leader, giving up
// early if the spawned process exits.
func waitForLeader(ctx context.Context, urls []string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, lockdReadyTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		for _, u := range urls {
			if leaderKnown(ctx, client, normalizeBaseURL(u)) {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("lockd exited before electing a leader (see lockd.log)")
		case <-ctx.Done():
			return fmt.Errorf("no lockstep leader at %v: %w", urls, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func leaderKnown(ctx context.Context, client *http.Client, base string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+api.PathCluster, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer drainClose(resp.Body)
	var cr api.ClusterResponse
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&cr) == nil && leaderBaseURL(cr) != ""
}
