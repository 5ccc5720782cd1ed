package node

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/raftadapter"
)

// Node is one member of a lock group.
type Node struct {
	cfg    Config
	raft   *raft.Raft
	fsm    *fsm
	notify *notifier
	// contacts is the leader's view of unreachable members.
	contacts *contacts
	peers    map[raft.ServerID]Peer
	// incarnation names this process of the node (see host.go); stored
	// is what it found on disk when it started; releases queues commands
	// that give up grants and queued requests nobody here can deliver;
	// attempts are this process's acquires whose callers may leave
	// without an answer (abandoned.go).
	incarnation uint64
	stored      raftadapter.StoredLog
	releases    chan lock.Command
	attempts    attempts
	done        chan struct{}
	// proposer gathers this leader's commands into entries (proposer.go).
	proposer *proposer
	// transfers remembers failed leadership transfers (transfer.go).
	transfers transfers
	// caughtUp is set once this process caught up with a read index
	// (readindex.go).
	caughtUp atomic.Bool
	wg       sync.WaitGroup
	once     sync.Once
}

// New starts a node: it opens Raft on the given transport and stores,
// bootstraps the group when asked and the node has no state yet (so the
// same command line restarts a node), and starts the expiry ticker.
func New(cfg Config) (*Node, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, peers: make(map[raft.ServerID]Peer), done: make(chan struct{}),
		contacts: newContacts(raft.ServerID(cfg.ID)), incarnation: newIncarnation(cfg.LeaseIDs),
		releases: make(chan lock.Command, releaseQueueLen)}
	for _, p := range cfg.Peers {
		n.peers[raft.ServerID(p.ID)] = p
	}
	hooks := cfg.hooks()
	n.notify = newNotifier(hooks.OnWake)
	f, err := newFSM(cfg.Lock, n.notify, bothEvents(cfg.Events, hooks.OnEvent), cfg.WatchHistory)
	if err != nil {
		return nil, err
	}
	f.applied = func(e appliedEntry) {
		n.noticeOrphans(e.index, e.term, e.events)
		n.noticeAttempt(e.cmd, e.res)
		n.logEvents(e.events)
	}
	f.restored = n.noticeRestoredOrphans
	f.onApply = hooks.OnApply
	f.onPanic = hooks.OnApplyPanic
	f.timed = cfg.Stages != nil || cfg.Tracer != nil
	n.fsm = f
	stored, err := raftadapter.ReadStoredLog(cfg.Stores)
	if err != nil {
		return nil, err
	}
	n.stored = stored
	if cfg.Bootstrap {
		if err := n.bootstrap(); err != nil {
			return nil, err
		}
	}
	r, err := raft.NewRaft(cfg.raftConfig(), n.bugFSM(f), raftadapter.KeepCompactionEdge(cfg.Stores.Log), cfg.Stores.Stable, cfg.Stores.Snapshot,
		raftadapter.GroupTransport(cfg.Transport, cfg.ElectionTimeout))
	if err != nil {
		return nil, fmt.Errorf("start raft: %w", err)
	}
	n.raft = r
	n.proposer = newProposer(r, cfg.ProposeDepth, n.stamp, cfg.ProposeTimeout, n.done)
	n.watchContacts()
	n.wg.Add(3)
	go n.runTicker()
	go n.announce()
	go n.sendReleases()
	return n, nil
}

func (n *Node) bootstrap() error {
	has, err := raft.HasExistingState(n.cfg.Stores.Log, n.cfg.Stores.Stable, n.cfg.Stores.Snapshot)
	if err != nil {
		return fmt.Errorf("inspect raft state: %w", err)
	}
	if has {
		return nil
	}
	var servers []raft.Server
	for _, p := range n.cfg.Peers {
		servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
	}
	conf := n.cfg.raftConfig()
	err = raft.BootstrapCluster(conf, n.cfg.Stores.Log, n.cfg.Stores.Stable, n.cfg.Stores.Snapshot,
		n.cfg.Transport, raft.Configuration{Servers: servers})
	if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("bootstrap: %w", err)
	}
	return nil
}

// Shutdown stops the ticker and Raft and closes the stores. Blocked callers
// get ErrShutdown or an indeterminate error.
func (n *Node) Shutdown() error {
	var err error
	n.once.Do(func() {
		close(n.done)
		// hashicorp/raft leaves an entry it took into its apply channel
		// just before shutting down unanswered for ever: every entry handed
		// to it resolves first, and the proposer sends none after done.
		<-n.proposer.finished
		n.wg.Wait()
		err = n.raft.Shutdown().Error()
		if c, ok := n.cfg.Transport.(raft.WithClose); ok {
			if cerr := c.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
		if n.cfg.Stores.Close != nil {
			if cerr := n.cfg.Stores.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
	})
	return err
}

// ID is this node's id.
func (n *Node) ID() string { return n.cfg.ID }

// Incarnation names this process of the node: the acquires it proposes
// carry it (host.go), so a harness can tell whose callers a grant served.
func (n *Node) Incarnation() uint64 { return n.incarnation }

// IsLeader reports whether this node believes it leads.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Leader returns the current leader as this node knows it.
func (n *Node) Leader() (Peer, bool) {
	_, id := n.raft.LeaderWithID()
	if id == "" {
		return Peer{}, false
	}
	p, ok := n.peers[id]
	return p, ok
}

// Peers returns the configured members.
func (n *Node) Peers() []Peer { return append([]Peer(nil), n.cfg.Peers...) }

// LeaderContact reports how long ago this node last heard from a leader
// (0 on the leader itself) and whether it knows one at all.
func (n *Node) LeaderContact() (time.Duration, bool) {
	if n.raft.State() == raft.Leader {
		return 0, true
	}
	if _, id := n.raft.LeaderWithID(); id == "" {
		return 0, false
	}
	return time.Since(n.raft.LastContact()), true
}

// Stats is a snapshot of counters for /metrics and /cluster.
type Stats struct {
	State        string
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	Lock         lock.Metrics
	// Snapshots and Restores count the state machine snapshots this node
	// took and restored since it started.
	Snapshots, Restores uint64
	// LeaderChanges counts the new leaders this node learned of since it
	// started (itself included).
	LeaderChanges uint64
}

// Stats reads Raft and state machine counters.
func (n *Node) Stats() Stats {
	s := Stats{
		State:        n.raft.State().String(),
		Term:         n.raft.CurrentTerm(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.raft.AppliedIndex(),
	}
	s.LeaderChanges = n.contacts.leaderChanges()
	n.fsm.read(func(st *lock.State) { s.Lock = st.Metrics(); s.Snapshots, s.Restores = n.fsm.snapshots, n.fsm.restores })
	return s
}

// LocalStatus reads resource from this node's state without the log: fast
// and possibly stale (a follower may lag the leader).
func (n *Node) LocalStatus(resource string) lock.Status {
	var st lock.Status
	n.fsm.read(func(s *lock.State) { st = s.Status(resource) })
	return st
}

// Snapshot returns this node's encoded state (tests compare replicas).
func (n *Node) Snapshot() []byte {
	var b []byte
	n.fsm.read(func(s *lock.State) { b = s.Snapshot() })
	return b
}
