// Package lockd assembles a runnable lockstep member on real TCP: Raft
// transport, durable stores (the WAL or raft-boltdb), nodes, the service
// (core/service) and its HTTP and gRPC front ends. cmd/lockd, the
// end-to-end tests and the benchmarks start members through it.
package lockd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/raftadapter"
	"github.com/lockstep/lockstep/core/server"
	"github.com/lockstep/lockstep/core/service"
	"github.com/lockstep/lockstep/core/shard"
	"github.com/lockstep/lockstep/core/stages"
	"github.com/lockstep/lockstep/core/tracing"
	"github.com/lockstep/lockstep/core/tracing/otlp"
	"github.com/lockstep/lockstep/core/wal"
)

// Options describe one member.
type Options struct {
	ID       string
	RaftAddr string
	HTTPAddr string
	// AdvertiseHTTP is the API address published to the other members and
	// to routers, when they must reach this member at another address than
	// the one it listens on (a proxy, NAT); "" publishes the bound address.
	AdvertiseHTTP string
	DataDir       string
	// Shards is the lock shard count to bootstrap the cluster with. Zero
	// takes the count this member kept from an earlier start, else what
	// the metadata group holds, else (bootstrapping) one shard.
	Shards int
	// LogStore picks the Raft log implementation (default wal).
	LogStore LogStoreKind
	// WALMode is per-group (a WAL directory per group) or shared (one WAL
	// for every group of this member, flushes merged across groups; needs
	// LogStore wal); "" takes the data directory's, shared for a new one.
	WALMode   WALMode
	Peers     []node.Peer
	Bootstrap bool
	Lock      lock.Config
	// Service tunes the API operations (zero fields keep their defaults).
	Service service.Config
	// Server tunes the HTTP front end (zero fields keep its defaults).
	Server   server.Config
	Logger   *slog.Logger
	RaftLogs io.Writer
	// Tuning passes through to every lock shard's node.Config (zero keeps
	// defaults).
	Tune func(*node.Config)
	// TuneShard, when set, adjusts lock shard g's node config once the
	// host has filled it in (the template's hooks cannot tell shards
	// apart; a test trace records each shard under its number).
	TuneShard func(g uint64, c *node.Config)
	// SpreadInterval is how often the member checks it leads no more than
	// its share of shards (default 2 s; negative never moves leaders).
	SpreadInterval time.Duration
	// DeadlockInterval is how often the metadata group's leader gathers
	// every lock shard's wait-for edges and breaks the cycles across
	// shards (default 500 ms; negative never).
	DeadlockInterval time.Duration
	// GRPCAddr, when set, also serves the API over gRPC there
	// (proto/lockstep/v1, core/grpcapi).
	GRPCAddr string
	// HealthAddr, when set, serves /livez, /readyz and /healthz (and
	// nothing else) there in plaintext, for probes that cannot present a
	// client certificate (health.go); "" serves them on the API port only.
	HealthAddr string
	// PprofAddr, when set, serves net/http/pprof there (loopback only,
	// pprof.go); "" is off.
	PprofAddr string
	// LogCache, when positive, puts a raft.LogCache of that many entries in
	// front of each group's log store.
	LogCache int
	// ACLBootstrapToken, when set, turns ACLs on for the whole cluster
	// with this secret as the first admin token (acl.go); harmless on
	// restart and on every member.
	ACLBootstrapToken string
	// TLS, when set, serves every port over TLS: mutual TLS on the member
	// port, client certificates on the API ports if TLS.APIClients is set.
	TLS *TLS
	// Tracer records the member's spans (core/tracing). Nil with Trace
	// enabled sets one up with an OTLP exporter, flushed by Stop; nil
	// otherwise is off.
	Tracer *tracing.Tracer
	Trace  otlp.Options

	// BeforeLogSync, when set, runs before every sync of every group's
	// WAL: the seam test builds inject disk faults through
	// (faultctl.Disk). Nil in production.
	BeforeLogSync func() error
}

// Member is a running lockstep process member.
type Member struct {
	Host    *shard.Host
	HTTP    *http.Server
	ln      net.Listener
	members *memberPort
	grpc    *grpcFront
	health  *healthFront
	// tls is whether the API serves TLS (the http.Server's own TLSConfig
	// is no sign: net/http sets it up while serving).
	tls    bool
	closed chan struct{}
	// flushTraces exports the spans still buffered (Options.Trace).
	flushTraces func(context.Context) error
	// wal is the member's shared WAL (Options.WALMode shared), else nil.
	wal *wal.Shared
	// profiles is the profiling listener (Options.PprofAddr), else nil.
	profiles *Profiles
}

// Start opens the member port, the metadata group and the lock shards
// (each with its own stores under DataDir) and serves HTTP. It returns once
// the listeners are bound; leadership comes later.
func Start(opts Options) (_ *Member, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SpreadInterval == 0 {
		opts.SpreadInterval = 2 * time.Second
	}
	if opts.DeadlockInterval == 0 {
		opts.DeadlockInterval = 500 * time.Millisecond
	}
	// Refused here, before anything opens.
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	bootstrap, err := bootstrapToken(opts.ACLBootstrapToken)
	if err != nil {
		return nil, err
	}
	shards, err := keptShards(opts.DataDir)
	if err != nil {
		return nil, err
	}
	switch {
	case opts.Shards > 0 && shards > 0 && opts.Shards != shards:
		return nil, fmt.Errorf("%w: --shards %d, but this member's data has %d shards (the count is fixed at bootstrap)",
			node.ErrConfig, opts.Shards, shards)
	case opts.Shards == 0 && shards == 0 && opts.Bootstrap:
		opts.Shards = 1
	case opts.Shards == 0:
		opts.Shards = shards
	}
	if opts.Trace.Service == "" {
		opts.Trace.Service, opts.Trace.Instance = "lockd", opts.ID
	}
	if opts.Trace.Logger == nil {
		opts.Trace.Logger = opts.Logger
	}
	var flushTraces func(context.Context) error
	opts.Tracer, flushTraces, err = otlp.Ensure(context.Background(), opts.Tracer, opts.Trace)
	if err != nil {
		return nil, err
	}
	// undo closes what Start opened so far, newest first, if it fails.
	var undo []func() error
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				_ = undo[i]()
			}
		}
	}()
	undo = append(undo, func() error { return flushTraces(context.Background()) })
	members, err := listenMembers(opts.RaftAddr, opts.Logger, opts.TLS, opts.Tracer)
	if err != nil {
		return nil, err
	}
	undo = append(undo, members.Close)
	ln, err := net.Listen("tcp", opts.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("http listen on %s: %w", opts.HTTPAddr, err)
	}
	undo = append(undo, ln.Close)
	front, err := listenGRPC(opts.GRPCAddr)
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() error { return front.stop(context.Background()) })
	probes, err := listenHealth(opts.HealthAddr)
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() error { return probes.stop(context.Background()) })
	sharedWAL, err := openSharedWAL(opts.DataDir, opts.WALMode, opts.LogStore, opts.BeforeLogSync)
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() error { return closeSharedWAL(sharedWAL) })
	env := func(g uint64) (shard.Env, error) {
		dir := filepath.Join(opts.DataDir, groupDir(g))
		// Local: env runs once per group, after Start's own err is done with.
		var stores raftadapter.Stores
		var err error
		if sharedWAL != nil {
			stores, err = openSharedStores(sharedWAL, g, dir, opts.RaftLogs)
		} else {
			stores, err = OpenDiskStores(dir, opts.LogStore, opts.RaftLogs, opts.BeforeLogSync)
		}
		if err != nil {
			return shard.Env{}, err
		}
		if opts.LogCache > 0 {
			cache, err := raft.NewLogCache(opts.LogCache, stores.Log)
			if err != nil {
				_ = stores.Close()
				return shard.Env{}, fmt.Errorf("log cache: %w", err)
			}
			stores.Log = cache
		}
		trans, err := members.raft.Transport(g)
		if err != nil {
			_ = stores.Close()
			return shard.Env{}, err
		}
		return shard.Env{Transport: trans, Stores: stores}, nil
	}
	recorder := stages.New()
	tmpl := node.Config{Lock: opts.Lock, Clock: node.NewMonotonicClock(), Logger: opts.Logger, RaftLogs: opts.RaftLogs,
		Stages: recorder, Tracer: opts.Tracer}
	if opts.Tune != nil {
		opts.Tune(&tmpl)
	}
	front.tune(&tmpl)
	h, err := shard.Start(shard.Config{
		ID: opts.ID, Peers: opts.Peers, APIAddr: cmp.Or(opts.AdvertiseHTTP, ln.Addr().String()), Shards: opts.Shards, Bootstrap: opts.Bootstrap,
		Env: env, Forward: members.forward, Node: tmpl, OnShards: func(n int) error { return keepShards(opts.DataDir, n) },
		SpreadInterval: max(opts.SpreadInterval, 0), Logger: opts.Logger, Tune: opts.TuneShard,
		DeadlockInterval: max(opts.DeadlockInterval, 0),
	})
	if err != nil {
		return nil, err
	}
	undo = append(undo, h.Shutdown)
	vcfg := opts.Service
	vcfg.Logger = opts.Logger
	vcfg.PeerTLS = opts.TLS.peerDial()
	vcfg.Tracer = opts.Tracer
	vcfg.Collectors = append(slices.Clone(vcfg.Collectors), recorder.Collector(), stages.RaftCollector())
	// One service behind both front ends: one in-flight bound, one
	// registry, one set of watches to end.
	svc, err := service.New(h, vcfg)
	if err != nil {
		return nil, err
	}
	hcfg := opts.Server
	hcfg.Logger = opts.Logger
	srv, err := server.New(svc, hcfg)
	if err != nil {
		return nil, fmt.Errorf("http config: %w", err)
	}
	m := &Member{
		Host:    h,
		HTTP:    srv.HTTPServer(),
		ln:      ln,
		members: members,
		grpc:    front,
		health:  probes,
		closed:  make(chan struct{}),
		wal:     sharedWAL,
	}
	apiTLS := opts.TLS.api()
	m.flushTraces = flushTraces
	front.serve(svc, opts.Logger, apiTLS)
	probes.serve(srv.Handler(), opts.Logger, opts.ID)
	// A copy: net/http adds its protocols to the config it serves.
	m.HTTP.TLSConfig, m.tls = apiTLS.Clone(), apiTLS != nil
	if bootstrap != nil {
		bootstrapACL(h, *bootstrap, m.closed, opts.Logger)
	}
	go func() {
		defer close(m.closed)
		var err error
		if apiTLS != nil {
			err = m.HTTP.ServeTLS(ln, "", "")
		} else {
			err = m.HTTP.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			opts.Logger.Error("http server stopped", "node", opts.ID, "err", err)
		}
	}()
	if opts.PprofAddr != "" {
		if m.profiles, err = ServeProfiles(opts.PprofAddr, opts.Logger); err != nil {
			undo = nil // m.Stop closes all Start opened
			return nil, errors.Join(err, m.Stop(context.Background()))
		}
	}
	return m, nil
}

// groupDir is where group g keeps its log and snapshots.
func groupDir(g uint64) string {
	if g == 0 {
		return "meta"
	}
	return fmt.Sprintf("shard-%d", g)
}

// shardsFile keeps the shard count next to the groups' data, so a restart
// opens its shards at once, before the metadata group has a leader.
const shardsFile = "shards"

func keptShards(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, shardsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read shard count: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: %s holds %q, not a shard count", node.ErrConfig, filepath.Join(dir, shardsFile), b)
	}
	return n, nil
}

func keepShards(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("keep shard count: %w", err)
	}
	tmp := filepath.Join(dir, shardsFile+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(n)+"\n"), 0o644); err != nil {
		return fmt.Errorf("keep shard count: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, shardsFile)); err != nil {
		return fmt.Errorf("keep shard count: %w", err)
	}
	return nil
}

// Addr is the bound HTTP address.
func (m *Member) Addr() string { return m.ln.Addr().String() }

// URL is the HTTP API's base URL: https when the member serves TLS.
func (m *Member) URL() string {
	if m.tls {
		return "https://" + m.Addr()
	}
	return "http://" + m.Addr()
}

// GRPCAddr is the bound gRPC address, "" when not serving gRPC.
func (m *Member) GRPCAddr() string { return m.grpc.addr() }

// HealthAddr is the bound health listener's address, "" without one.
func (m *Member) HealthAddr() string { return m.health.addr() }

// Shard returns lock shard s's node on this member (1-based), or nil while
// the shards have not started.
func (m *Member) Shard(s int) *node.Node {
	n, _ := m.Host.Group(s)
	return n
}

// Stop shuts the HTTP server and every group down.
func (m *Member) Stop(ctx context.Context) error {
	perr := errors.Join(m.health.stop(ctx), m.profiles.Close())
	gerr := m.grpc.stop(ctx)
	herr := m.HTTP.Shutdown(ctx)
	if herr != nil {
		_ = m.HTTP.Close()
	}
	<-m.closed
	nerr := m.Host.Shutdown() // closes the Raft transports
	return errors.Join(perr, gerr, nerr, ignoreCanceled(herr), m.members.Close(), closeSharedWAL(m.wal), m.flushTraces(ctx))
}

func ignoreCanceled(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// ParsePeers parses "id=raftaddr[@httpaddr],..." as used by --peers.
func ParsePeers(s string) ([]node.Peer, error) {
	var peers []node.Peer
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, addrs, ok := strings.Cut(item, "=")
		if !ok || id == "" || addrs == "" {
			return nil, fmt.Errorf("peer %q: want id=raftaddr[@httpaddr]", item)
		}
		raftAddr, httpAddr, _ := strings.Cut(addrs, "@")
		if _, _, err := net.SplitHostPort(raftAddr); err != nil {
			return nil, fmt.Errorf("peer %q: raft address: %w", item, err)
		}
		if httpAddr != "" {
			if _, _, err := net.SplitHostPort(httpAddr); err != nil {
				return nil, fmt.Errorf("peer %q: http address: %w", item, err)
			}
		}
		if seen[id] {
			return nil, fmt.Errorf("peer id %q listed twice", id)
		}
		seen[id] = true
		peers = append(peers, node.Peer{ID: id, RaftAddr: raftAddr, HTTPAddr: httpAddr})
	}
	if len(peers) == 0 {
		return nil, errors.New("no peers given")
	}
	return peers, nil
}
