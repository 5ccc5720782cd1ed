package raftadapter

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/hashicorp/raft"
)

var _ raft.SnapshotStore = (*memSnapshots)(nil)

// memSnapshots is an in-memory raft.SnapshotStore with the semantics of the
// FileSnapshotStore lockd runs on, so that the simulator's disk is that
// disk: a snapshot is listed only once its sink closes, a cancelled one
// never is, the newest memSnapshotsRetained are kept, and List gives the
// highest (term, index) first. raft's InmemSnapshotStore instead lists
// whichever snapshot was created last: a follower that installed a leader's
// snapshot older than its own (whose log prefix it had already compacted)
// restarted from the older one and found a gap in its log (raft panics:
// deterministic hotShard seed 19).
type memSnapshots struct {
	mu    sync.Mutex
	snaps []memSnapshot // ordered as List returns them
}

// memSnapshotsRetained matches lockd's NewFileSnapshotStore(dir, 2, ...).
const memSnapshotsRetained = 2

type memSnapshot struct {
	meta raft.SnapshotMeta
	data []byte
}

func newMemSnapshots() *memSnapshots { return &memSnapshots{} }

// Create implements raft.SnapshotStore.
func (s *memSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	if version != 1 {
		return nil, fmt.Errorf("unsupported snapshot version %d", version)
	}
	return &memSnapshotSink{store: s, meta: raft.SnapshotMeta{
		Version: version, ID: fmt.Sprintf("%d-%d", term, index), Index: index, Term: term,
		Configuration: configuration, ConfigurationIndex: configurationIndex,
	}}, nil
}

// List implements raft.SnapshotStore.
func (s *memSnapshots) List() ([]*raft.SnapshotMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*raft.SnapshotMeta, len(s.snaps))
	for i := range s.snaps {
		m := s.snaps[i].meta
		out[i] = &m
	}
	return out, nil
}

// Open implements raft.SnapshotStore.
func (s *memSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sn := range s.snaps {
		if sn.meta.ID == id {
			m := sn.meta
			return &m, io.NopCloser(bytes.NewReader(sn.data)), nil
		}
	}
	return nil, nil, fmt.Errorf("open snapshot %s: not found", id)
}

func (s *memSnapshots) add(sn memSnapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snaps = slices.DeleteFunc(s.snaps, func(o memSnapshot) bool { return o.meta.ID == sn.meta.ID })
	s.snaps = append(s.snaps, sn)
	slices.SortStableFunc(s.snaps, func(a, b memSnapshot) int {
		return cmp.Or(cmp.Compare(b.meta.Term, a.meta.Term), cmp.Compare(b.meta.Index, a.meta.Index))
	})
	if len(s.snaps) > memSnapshotsRetained {
		s.snaps = s.snaps[:memSnapshotsRetained]
	}
}

var _ raft.SnapshotSink = (*memSnapshotSink)(nil)

// memSnapshotSink buffers a snapshot until Close publishes it.
type memSnapshotSink struct {
	store *memSnapshots
	meta  raft.SnapshotMeta
	buf   bytes.Buffer
	done  bool
}

var errSinkDone = errors.New("snapshot sink already closed or cancelled")

func (k *memSnapshotSink) ID() string { return k.meta.ID }

func (k *memSnapshotSink) Write(p []byte) (int, error) {
	if k.done {
		return 0, errSinkDone
	}
	return k.buf.Write(p)
}

// Close publishes the snapshot. Like FileSnapshotSink's, it is idempotent
// (an FSM's Persist closes the sink and raft closes it again) and publishes
// nothing after Cancel.
func (k *memSnapshotSink) Close() error {
	if k.done {
		return nil
	}
	k.done = true
	k.meta.Size = int64(k.buf.Len())
	k.store.add(memSnapshot{meta: k.meta, data: bytes.Clone(k.buf.Bytes())})
	return nil
}

func (k *memSnapshotSink) Cancel() error {
	k.done = true
	return nil
}
