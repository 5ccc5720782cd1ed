// Command lockd runs a lockstep member, or with "dev" a whole 3-node
// cluster in one process.
//
//	lockd dev [--data-dir DIR]
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
	"net/http"
	_ "net/http/pprof" // served only with --pprof
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/node"
)

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var err error
	if len(os.Args) > 1 && os.Args[1] == "dev" {
		err = runDev(os.Args[2:], logger)
	} else {
		err = runMember(os.Args[1:], logger)
	}
	if err != nil {
		logger.Error("lockd failed", "err", err)
		os.Exit(1)
	}
}

func runMember(args []string, logger *slog.Logger) error {
	fs := flag.NewFlagSet("lockd", flag.ContinueOnError)
	id := fs.String("id", "", "this member's id (must appear in --peers)")
	raftAddr := fs.String("raft-addr", "", "Raft TCP address to listen on")
	httpAddr := fs.String("http-addr", "127.0.0.1:7070", "HTTP API address to listen on")
	dataDir := fs.String("data-dir", "", "directory for the Raft log and snapshots")
	peers := fs.String("peers", "", "all members: id=raftaddr[@httpaddr],... (httpaddr enables forwarding to that member)")
	bootstrap := fs.Bool("bootstrap", false, "form the cluster from --peers if this member has no state (harmless on restart)")
	maxTTL := fs.Duration("max-ttl", lock.DefaultConfig().MaxTTL, "largest TTL a client may ask for")
	raftLog := fs.Bool("raft-log", false, "print hashicorp/raft's own warnings")
	logStore := fs.String("log-store", "wal", "Raft log store: wal (one fdatasync per batch) or bolt (raft-boltdb/v2)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *id == "" || *raftAddr == "" || *dataDir == "" || *peers == "" {
		return errors.New("--id, --raft-addr, --data-dir and --peers are required (or run: lockd dev)")
	}
	ps, err := lockd.ParsePeers(*peers)
	if err != nil {
		return err
	}
	cfg := lock.DefaultConfig()
	cfg.MaxTTL = *maxTTL
	m, err := lockd.Start(lockd.Options{
		ID: *id, RaftAddr: *raftAddr, HTTPAddr: *httpAddr, DataDir: *dataDir, Peers: ps,
		Bootstrap: *bootstrap, Lock: cfg, Logger: logger, RaftLogs: raftLogs(*raftLog),
		LogStore: node.LogStoreKind(*logStore),
	})
	if err != nil {
		return err
	}
	logger.Info("lockd member started", "id", *id, "http", m.Addr(), "raft", *raftAddr, "data", *dataDir)
	waitForSignal()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return m.Stop(ctx)
}

// runDev starts three members on loopback with no configuration: HTTP on
// 7070-7072, Raft on 7170-7172, data in a temp dir unless --data-dir.
func runDev(args []string, logger *slog.Logger) error {
	fs := flag.NewFlagSet("lockd dev", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "keep data here (default: a temp dir removed on exit)")
	host := fs.String("host", "127.0.0.1", "loopback address to bind")
	httpBase := fs.Int("http-port", 7070, "first HTTP port (three consecutive ports)")
	raftBase := fs.Int("raft-port", 7170, "first Raft port (three consecutive ports)")
	raftLog := fs.Bool("raft-log", false, "print hashicorp/raft's own warnings")
	pprofAddr := fs.String("pprof", "", "serve net/http/pprof on this address (profiling)")
	logStore := fs.String("log-store", "wal", "Raft log store: wal or bolt (raft-boltdb/v2)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *pprofAddr != "" {
		go func() { logger.Warn("pprof stopped", "err", http.ListenAndServe(*pprofAddr, nil)) }()
	}
	dir := *dataDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "lockstep-dev-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	var peers []node.Peer
	for i := 0; i < 3; i++ {
		peers = append(peers, node.Peer{
			ID:       fmt.Sprintf("n%d", i+1),
			RaftAddr: fmt.Sprintf("%s:%d", *host, *raftBase+i),
			HTTPAddr: fmt.Sprintf("%s:%d", *host, *httpBase+i),
		})
	}
	var members []*lockd.Member
	stopAll := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, m := range members {
			if err := m.Stop(ctx); err != nil {
				logger.Warn("stop member", "node", m.Node.ID(), "err", err)
			}
		}
	}
	defer stopAll()
	for _, p := range peers {
		m, err := lockd.Start(lockd.Options{
			ID: p.ID, RaftAddr: p.RaftAddr, HTTPAddr: p.HTTPAddr, DataDir: filepath.Join(dir, p.ID),
			Peers: peers, Bootstrap: true, Lock: lock.DefaultConfig(), Logger: logger, RaftLogs: raftLogs(*raftLog),
			LogStore: node.LogStoreKind(*logStore),
		})
		if err != nil {
			return err
		}
		members = append(members, m)
	}
	for _, p := range peers {
		fmt.Printf("lockstep dev node %s: http://%s (raft %s)\n", p.ID, p.HTTPAddr, p.RaftAddr)
	}
	fmt.Printf("data in %s; try: curl -s -XPOST http://%s/lock/acquire -d '{\"resource\":\"r1\",\"client_id\":\"me\",\"ttl\":10000}'\n",
		dir, peers[0].HTTPAddr)
	waitForSignal()
	return nil
}

func raftLogs(on bool) io.Writer {
	if on {
		return os.Stderr
	}
	return io.Discard
}

func waitForSignal() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	<-ch
}
