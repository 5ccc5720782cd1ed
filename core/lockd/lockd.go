// Package lockd assembles a runnable lockstep member on real TCP: Raft
// transport, durable stores (the WAL or raft-boltdb), node and HTTP API. cmd/lockd, the end-to-end tests
// and the benchmarks start members through it.
package lockd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/server"
)

// Options describe one member.
type Options struct {
	ID       string
	RaftAddr string
	HTTPAddr string
	DataDir  string
	// LogStore picks the Raft log implementation (default wal).
	LogStore  LogStoreKind
	Peers     []node.Peer
	Bootstrap bool
	Lock      lock.Config
	// Server tunes the HTTP front end (zero fields keep its defaults).
	Server   server.Config
	Logger   *slog.Logger
	RaftLogs io.Writer
	// Tuning passes through to node.Config (zero keeps defaults).
	Tune func(*node.Config)
}

// Member is a running lockstep process member.
type Member struct {
	Node    *node.Node
	HTTP    *http.Server
	ln      net.Listener
	members *memberPort
	closed  chan struct{}
}

// Start opens stores, joins Raft and serves HTTP. It returns once the
// listeners are bound; leadership comes later.
func Start(opts Options) (*Member, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	stores, err := OpenDiskStores(opts.DataDir, opts.LogStore, opts.RaftLogs)
	if err != nil {
		return nil, err
	}
	members, err := listenMembers(opts.RaftAddr, opts.Logger, opts.RaftLogs)
	if err != nil {
		_ = stores.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.HTTPAddr)
	if err != nil {
		_ = members.Close()
		_ = stores.Close()
		return nil, fmt.Errorf("http listen on %s: %w", opts.HTTPAddr, err)
	}
	cfg := node.Config{
		ID: opts.ID, Peers: opts.Peers, Lock: opts.Lock, Clock: node.NewMonotonicClock(),
		Logger: opts.Logger, RaftLogs: opts.RaftLogs, Bootstrap: opts.Bootstrap,
		Transport: members.raft, Stores: stores, Forwarder: members.forwarder(),
	}
	if opts.Tune != nil {
		opts.Tune(&cfg)
	}
	n, err := node.New(cfg)
	if err != nil {
		_ = ln.Close()
		_ = members.Close()
		_ = stores.Close()
		return nil, err
	}
	scfg := opts.Server
	scfg.Logger = opts.Logger
	if scfg.MaxWait == 0 {
		scfg.MaxWait = opts.Lock.MaxWait
	}
	srv := server.New(n, scfg)
	m := &Member{
		Node:    n,
		HTTP:    srv.HTTPServer(),
		ln:      ln,
		members: members,
		closed:  make(chan struct{}),
	}
	go func() {
		defer close(m.closed)
		if err := m.HTTP.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			opts.Logger.Error("http server stopped", "node", opts.ID, "err", err)
		}
	}()
	members.serveForwards(n.ForwardHandler())
	return m, nil
}

// Addr is the bound HTTP address.
func (m *Member) Addr() string { return m.ln.Addr().String() }

// Stop shuts the HTTP server and the node down.
func (m *Member) Stop(ctx context.Context) error {
	herr := m.HTTP.Shutdown(ctx)
	if herr != nil {
		_ = m.HTTP.Close()
	}
	<-m.closed
	nerr := m.Node.Shutdown() // closes the Raft transport
	return errors.Join(nerr, ignoreCanceled(herr), m.members.Close())
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
