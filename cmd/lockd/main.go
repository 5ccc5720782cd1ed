// Command lockd runs a lockstep member, or with "dev" a whole 3-node
// cluster in one process.
//
//	lockd dev [--data-dir DIR]
//	lockd gateway --join 127.0.0.1:7070,127.0.0.1:7071 [--http-addr 127.0.0.1:7000]
//	lockd --id n1 --raft-addr 127.0.0.1:7170 --http-addr 127.0.0.1:7070 \
//	      --data-dir data/n1 --bootstrap \
//	      --peers n1=127.0.0.1:7170@127.0.0.1:7070,n2=127.0.0.1:7171@127.0.0.1:7071,n3=127.0.0.1:7172@127.0.0.1:7072
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/lockstep/lockstep/core/gateway"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/server"
	"github.com/lockstep/lockstep/core/service"
)

const usageHead = `lockd serves lockstep, a Raft-replicated lock service with an HTTP/JSON API.

Usage:
  lockd dev [flags]
      start a local 3-node cluster with 3 lock shards in this process, no
      configuration needed (HTTP on 127.0.0.1:7070-7072, gRPC on
      127.0.0.1:7270-7272, a gateway on 127.0.0.1:7000, data in a temp dir
      unless --data-dir; plaintext, loopback only; --tls serves TLS with a
      throwaway CA)
  lockd gateway --join HOST:PORT[,HOST:PORT] [flags]
      run a stateless gateway: the same HTTP API, each request sent
      straight to its shard's leader
  lockd --id ID --raft-addr HOST:PORT --data-dir DIR --peers LIST [flags]
      run one member of a cluster; --peers lists every member as
      id=raftaddr[@httpaddr],... and the same command line restarts it;
      it needs --tls-cert, --tls-key and --tls-ca (mutual TLS between
      members, HTTPS and gRPC over TLS), or --insecure for plaintext
  lockd certs --dir DIR --nodes n1,n2,n3 [--clients c1] [flags]
      make a CA and node, gateway and client certificates (ECDSA P-256)
      for --tls-cert, --tls-key and --tls-ca
  lockd -h | --help | help
      this text
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is lockd with its streams passed in: 0 on success or help, 2 for a
// wrong command line, 1 when a member fails at run time.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "certs" {
		return runCerts(args[1:], stdout, stderr)
	}
	dev := len(args) > 0 && args[0] == "dev"
	gw := len(args) > 0 && args[0] == "gateway"
	if dev || gw {
		args = args[1:]
	}
	if !dev && len(args) == 1 && args[0] == "help" {
		printUsage(stdout)
		return 0
	}
	var start func(*slog.Logger) error
	var err error
	switch {
	case gw:
		var c gateway.Config
		c, err = parseGateway(args)
		start = func(l *slog.Logger) error { return runGateway(c, stdout, l) }
	case dev:
		var c devConfig
		c, err = parseDev(args)
		start = func(l *slog.Logger) error { return runDev(c, stdout, l) }
	default:
		var opts lockd.Options
		opts, err = parseMember(args)
		start = func(l *slog.Logger) error { return runMember(opts, l) }
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		printUsage(stdout)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "lockd: %v\n\n", err)
		printUsage(stderr)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := start(logger); err != nil {
		logger.Error("lockd failed", "err", err)
		return 1
	}
	return 0
}

// flagSets are the command lines of every form: member, dev, gateway, certs.
func flagSets() []*flag.FlagSet {
	return []*flag.FlagSet{memberFlags(new(memberArgs)), devFlags(new(devConfig)),
		gatewayFlags(new(gateway.Config), new(string), new(gatewayFaultArgs), new(tlsArgs)), certsFlags(new(certsArgs))}
}

// printUsage shows both forms and every flag.
func printUsage(w io.Writer) {
	fmt.Fprint(w, usageHead)
	for _, fs := range flagSets() {
		fmt.Fprintf(w, "\nFlags of %s:\n", fs.Name())
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}

// limits are the flags both forms share: state machine bounds, the
// service's limits and the HTTP front end's.
type limits struct {
	lock    lock.Config
	service service.Config
	server  server.Config
}

func (l *limits) register(fs *flag.FlagSet) {
	l.lock, l.service, l.server = lock.DefaultConfig(), service.DefaultConfig(), server.DefaultConfig()
	fs.DurationVar(&l.lock.MinTTL, "min-ttl", l.lock.MinTTL, "smallest lease TTL a client may ask for (all members must agree)")
	fs.DurationVar(&l.lock.MaxTTL, "max-ttl", l.lock.MaxTTL, "largest lease TTL a client may ask for (all members must agree)")
	fs.DurationVar(&l.lock.MaxWait, "max-wait", l.lock.MaxWait, "longest acquire wait a client may ask for (all members must agree)")
	fs.IntVar(&l.lock.MaxResources, "max-resources", l.lock.MaxResources, "most resources in the lock table (held or queued); more is 429 (all members must agree)")
	fs.IntVar(&l.lock.MaxWaitersPerQueue, "max-waiters", l.lock.MaxWaitersPerQueue, "most queued acquires per resource; more is 429 (all members must agree)")
	fs.DurationVar(&l.service.RequestTimeout, "request-timeout", l.service.RequestTimeout, "time to reach the leader and commit (a blocking acquire adds its wait)")
	fs.DurationVar(&l.server.ReadTimeout, "read-timeout", l.server.ReadTimeout, "time to receive a request's headers, and again its body")
	fs.DurationVar(&l.server.WriteTimeout, "write-timeout", l.server.WriteTimeout, "time to write a reply after the request's own deadline")
	fs.DurationVar(&l.server.IdleTimeout, "idle-timeout", l.server.IdleTimeout, "close keep-alive connections idle this long")
	fs.IntVar(&l.service.MaxInFlight, "max-in-flight", l.service.MaxInFlight, "API requests served at once per member; more get 503 overloaded with Retry-After: 1")
	fs.Int64Var(&l.server.MaxBodyBytes, "max-body-bytes", l.server.MaxBodyBytes, "largest request body")
	fs.DurationVar(&l.service.ReadyLeaderContact, "ready-leader-contact", l.service.ReadyLeaderContact, "/readyz fails when the leader was last heard from longer ago; with ACLs on, token checks fail (503) when the metadata leader was")
	fs.Uint64Var(&l.service.ReadyApplyLag, "ready-apply-lag", l.service.ReadyApplyLag, "/readyz fails when the applied index trails the leader's commit index by more entries")
	fs.DurationVar(&l.service.ReadyTimeout, "ready-timeout", l.service.ReadyTimeout, "time a /readyz check (or a stale read not caught up yet) waits to ask each shard's leader how far its log goes and to apply that far")
}

// check refuses values the service or server would otherwise replace by a
// default.
func (l *limits) check() error {
	for name, d := range map[string]time.Duration{
		"request-timeout": l.service.RequestTimeout, "read-timeout": l.server.ReadTimeout,
		"write-timeout": l.server.WriteTimeout, "idle-timeout": l.server.IdleTimeout,
		"ready-leader-contact": l.service.ReadyLeaderContact, "ready-timeout": l.service.ReadyTimeout,
	} {
		if d <= 0 {
			return fmt.Errorf("--%s must be > 0", name)
		}
	}
	if l.service.MaxInFlight <= 0 || l.server.MaxBodyBytes <= 0 || l.service.ReadyApplyLag == 0 {
		return errors.New("--max-in-flight, --max-body-bytes and --ready-apply-lag must be > 0")
	}
	if err := l.lock.Validate(); err != nil {
		return fmt.Errorf("limits: %w", err)
	}
	return nil
}

type memberArgs struct {
	id, raftAddr, httpAddr, dataDir, peers string
	shards                                 int
	spread                                 time.Duration
	deadlockInterval                       time.Duration
	advertiseHTTP                          string
	bootstrap                              bool
	settings                               memberSettings
	raft                                   raftArgs
	faults                                 faultArgs
	grpc                                   grpcArgs
	health                                 healthArgs
	pprof                                  pprofArgs
	tls                                    tlsArgs
}

func memberFlags(a *memberArgs) *flag.FlagSet {
	fs := flag.NewFlagSet("lockd", flag.ContinueOnError)
	fs.StringVar(&a.id, "id", "", "this member's id (must appear in --peers)")
	fs.StringVar(&a.raftAddr, "raft-addr", "", "Raft TCP address to listen on")
	fs.StringVar(&a.httpAddr, "http-addr", "127.0.0.1:7070", "HTTP API address to listen on")
	fs.StringVar(&a.dataDir, "data-dir", "", "directory for the Raft log and snapshots")
	fs.StringVar(&a.peers, "peers", "", "all members: id=raftaddr[@httpaddr],... (members publish their HTTP address; @httpaddr is optional)")
	fs.IntVar(&a.shards, "shards", 0, "lock shards (Raft groups) to bootstrap the cluster with; kept in the metadata group, so a restart needs no flag (default 1)")
	fs.StringVar(&a.advertiseHTTP, "advertise-http", "", "HTTP API address to publish to the other members and routers, when they reach this member elsewhere than --http-addr (a proxy, NAT); default: the bound address")
	fs.DurationVar(&a.spread, "spread-interval", 0, "how often a member checks it leads no more than its share of the lock shards, handing the rest over (0: 2s; negative: never)")
	fs.DurationVar(&a.deadlockInterval, "deadlock-interval", 0, "how often the metadata group's leader looks for wait-for cycles across lock shards and breaks each by cancelling its youngest waiter (0: 500ms; negative: never)")
	fs.BoolVar(&a.bootstrap, "bootstrap", false, "form the cluster from --peers if this member has no state (harmless on restart)")
	a.settings.register(fs)
	a.raft.register(fs)
	a.faults.register(fs)
	a.grpc.registerMember(fs)
	a.health.register(fs)
	a.pprof.register(fs)
	a.tls.register(fs)
	return fs
}

// parse parses args with fs, which reports nothing itself: run prints the
// error and the usage once, on the right stream.
func parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if faults := refuseFaultFlags(args); faults != nil {
			return faults
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

func parseMember(args []string) (lockd.Options, error) {
	var a memberArgs
	if err := parse(memberFlags(&a), args); err != nil {
		return lockd.Options{}, err
	}
	if a.id == "" || a.raftAddr == "" || a.dataDir == "" || a.peers == "" {
		return lockd.Options{}, errors.New("--id, --raft-addr, --data-dir and --peers are required (or run: lockd dev)")
	}
	ps, err := lockd.ParsePeers(a.peers)
	if err != nil {
		return lockd.Options{}, err
	}
	if err := a.settings.check(); err != nil {
		return lockd.Options{}, err
	}
	if a.shards < 0 || a.shards > maxShards {
		return lockd.Options{}, fmt.Errorf("--shards must be in 1..%d", maxShards)
	}
	if err := a.health.check(); err != nil {
		return lockd.Options{}, err
	}
	if err := a.pprof.check(); err != nil {
		return lockd.Options{}, err
	}
	if a.advertiseHTTP != "" {
		if _, _, err := net.SplitHostPort(a.advertiseHTTP); err != nil {
			return lockd.Options{}, fmt.Errorf("--advertise-http: %w", err)
		}
	}
	opts := lockd.Options{
		ID: a.id, RaftAddr: a.raftAddr, HTTPAddr: a.httpAddr, DataDir: a.dataDir, Peers: ps, Shards: a.shards,
		Bootstrap: a.bootstrap, GRPCAddr: a.grpc.addr, SpreadInterval: a.spread, AdvertiseHTTP: a.advertiseHTTP,
		HealthAddr: a.health.addr, PprofAddr: a.pprof.addr, DeadlockInterval: a.deadlockInterval,
	}
	a.settings.apply(&opts)
	commitPath := opts.Tune
	opts.Tune = func(c *node.Config) { a.raft.tune(c); commitPath(c) }
	if err := applyFaults(&a.faults, &opts); err != nil {
		return lockd.Options{}, err
	}
	if opts.TLS, err = a.tls.member(); err != nil {
		return lockd.Options{}, err
	}
	return opts, nil
}

func runMember(opts lockd.Options, logger *slog.Logger) error {
	opts.Logger = logger
	m, err := lockd.Start(opts)
	if err != nil {
		return err
	}
	logger.Info("lockd member started", "id", opts.ID, "http", m.URL(), "raft", opts.RaftAddr, "data", opts.DataDir,
		"tls", opts.TLS != nil)
	<-signals()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return m.Stop(ctx)
}

// maxShards bounds --shards (each shard is a Raft group on every member).
const maxShards = 256

// devConfig is the command line of lockd dev.
type devConfig struct {
	dataDir, host                     string
	gatewayAddr                       string
	httpBase, raftBase, nodes, shards int
	tls                               bool
	settings                          memberSettings
	grpc                              grpcArgs
	pprof                             pprofArgs
}

func devFlags(c *devConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("lockd dev", flag.ContinueOnError)
	fs.StringVar(&c.dataDir, "data-dir", "", "keep data here (default: a temp dir removed on exit)")
	fs.StringVar(&c.host, "host", "127.0.0.1", "loopback address to bind")
	fs.IntVar(&c.httpBase, "http-port", 7070, "first HTTP port (one per node, consecutive)")
	fs.IntVar(&c.raftBase, "raft-port", 7170, "first Raft port (one per node, consecutive)")
	fs.IntVar(&c.nodes, "nodes", 3, "members to start")
	fs.IntVar(&c.shards, "shards", 3, "lock shards (Raft groups on every member)")
	c.pprof.register(fs)
	fs.StringVar(&c.gatewayAddr, "gateway-addr", "127.0.0.1:7000", "also serve a gateway here (empty: none)")
	fs.BoolVar(&c.tls, "tls", false, "serve TLS everywhere with a throwaway CA and certificates made in a temp dir (default: plaintext)")
	c.settings.register(fs)
	c.grpc.registerDev(fs)
	return fs
}

func parseDev(args []string) (devConfig, error) {
	var c devConfig
	if err := parse(devFlags(&c), args); err != nil {
		return devConfig{}, err
	}
	if err := c.settings.check(); err != nil {
		return devConfig{}, err
	}
	if err := c.pprof.check(); err != nil {
		return devConfig{}, err
	}
	if c.nodes < 1 || c.nodes > 9 {
		return devConfig{}, errors.New("--nodes must be in 1..9")
	}
	if c.shards < 1 || c.shards > maxShards {
		return devConfig{}, fmt.Errorf("--shards must be in 1..%d", maxShards)
	}
	return c, nil
}

// runDev starts --nodes members (3) with --shards lock shards (3) on
// loopback with no configuration: HTTP on 7070..., Raft on 7170..., data in
// a temp dir unless --data-dir.
func runDev(c devConfig, stdout io.Writer, logger *slog.Logger) error {
	// Caught from the start: a signal during start-up still removes the
	// temp dirs.
	sig := signals()
	if c.pprof.addr != "" {
		profiles, err := lockd.ServeProfiles(c.pprof.addr, logger)
		if err != nil {
			return err
		}
		defer profiles.Close()
		fmt.Fprintf(stdout, "lockstep dev profiles: http://%s/debug/pprof/\n", profiles.Addr())
	}
	peers := devPeers(c)
	d, err := startDevCluster(c, peers, logger)
	if err != nil {
		return err
	}
	defer d.stop(logger)
	transport := "plaintext"
	if d.pki != nil {
		transport = "TLS"
	}
	for i, p := range peers {
		fmt.Fprintf(stdout, "lockstep dev node %s: %s (raft %s, %s)\n", p.ID, d.members[i].URL(), p.RaftAddr, transport)
		if addr := d.members[i].GRPCAddr(); addr != "" {
			fmt.Fprintf(stdout, "lockstep dev node %s: grpc %s (%s)\n", p.ID, addr, transport)
		}
	}
	if d.gateway != nil {
		fmt.Fprintf(stdout, "lockstep dev gateway: %s (sends each request to its shard's leader)\n", d.gateway.URL())
	}
	fmt.Fprintf(stdout, "%d lock shards (Raft groups) on every node, plus the metadata group\n", c.shards)
	if d.pki != nil {
		cl := d.pki.issued.Clients[devClient]
		fmt.Fprintf(stdout, "TLS everywhere with a throwaway CA (removed on exit): CA %s, client certificate %s, key %s\n",
			d.pki.issued.CA, cl.Cert, cl.Key)
	} else {
		fmt.Fprintf(stdout, "plaintext on loopback, no TLS (lockd dev --tls serves TLS)\n")
	}
	fmt.Fprintf(stdout, "data in %s; try: curl -s %s-XPOST %s/lock/acquire -d '{\"resource\":\"r1\",\"client_id\":\"me\",\"ttl\":10000}'\n",
		d.dir, d.pki.curlFlags(), d.members[0].URL())
	<-sig
	return nil
}

// devPeers are the dev members: n1..nN on consecutive ports of --host.
func devPeers(c devConfig) []node.Peer {
	var peers []node.Peer
	for i := 0; i < c.nodes; i++ {
		peers = append(peers, node.Peer{
			ID:       fmt.Sprintf("n%d", i+1),
			RaftAddr: fmt.Sprintf("%s:%d", c.host, c.raftBase+i),
			HTTPAddr: fmt.Sprintf("%s:%d", c.host, c.httpBase+i),
		})
	}
	return peers
}

// devCluster is what lockd dev runs.
type devCluster struct {
	// dir holds the members' data; removed by stop unless it was --data-dir.
	dir     string
	tmp     bool
	pki     *devPKI
	members []*lockd.Member
	gateway *gateway.Gateway // nil with --gateway-addr ""
}

// startDevCluster starts the members of c at peers and its gateway; on failure
// it stops what it started.
func startDevCluster(c devConfig, peers []node.Peer, logger *slog.Logger) (*devCluster, error) {
	d := &devCluster{dir: c.dataDir}
	if d.dir == "" {
		tmp, err := os.MkdirTemp("", "lockstep-dev-")
		if err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
		d.dir, d.tmp = tmp, true
	}
	if err := d.start(c, peers, logger); err != nil {
		d.stop(logger)
		return nil, err
	}
	return d, nil
}

func (d *devCluster) start(c devConfig, peers []node.Peer, logger *slog.Logger) error {
	if c.tls {
		var ids []string
		for _, p := range peers {
			ids = append(ids, p.ID)
		}
		var err error
		if d.pki, err = makeDevPKI(ids); err != nil {
			return err
		}
	}
	for i, p := range peers {
		opts := lockd.Options{
			ID: p.ID, RaftAddr: p.RaftAddr, HTTPAddr: p.HTTPAddr, DataDir: filepath.Join(d.dir, p.ID),
			Peers: peers, Bootstrap: true, Shards: c.shards, Logger: logger,
			GRPCAddr: c.grpc.devAddr(c.host, i), TLS: d.pki.member(p.ID),
		}
		c.settings.apply(&opts)
		m, err := lockd.Start(opts)
		if err != nil {
			return err
		}
		d.members = append(d.members, m)
	}
	if c.gatewayAddr != "" {
		g, err := startDevGateway(c.gatewayAddr, peers, logger, d.pki, c.settings.observe.trace)
		if err != nil {
			return err
		}
		d.gateway = g
	}
	return nil
}

// stop stops the gateway and the members and removes the temp dirs.
func (d *devCluster) stop(logger *slog.Logger) {
	if d.gateway != nil {
		stopDevGateway(d.gateway, logger)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, m := range d.members {
		if err := m.Stop(ctx); err != nil {
			logger.Warn("stop member", "node", m.Host.ID(), "err", err)
		}
	}
	if d.pki != nil {
		_ = os.RemoveAll(d.pki.dir)
	}
	if d.tmp {
		_ = os.RemoveAll(d.dir)
	}
}

func raftLogs(on bool) io.Writer {
	if on {
		return os.Stderr
	}
	return io.Discard
}

// signals catches SIGINT and SIGTERM from now on; receive to wait for one.
func signals() <-chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	return ch
}
