package meta

import (
	"errors"
	"testing"
)

// TestApply: goal — the shard count is set once and never changed, members
// publish and re-publish addresses, and every change (only a change) bumps
// the version. Method: a scripted sequence with the expected version.
func TestApply(t *testing.T) {
	var s State
	steps := []struct {
		cmd     Command
		err     error
		version uint64
	}{
		{Command{Op: OpSetShards, Shards: 3}, nil, 1},
		{Command{Op: OpSetShards, Shards: 3}, nil, 1},
		{Command{Op: OpSetShards, Shards: 4}, ErrShardsFixed, 1},
		{Command{Op: OpPublish, Member: Member{ID: "n2", RaftAddr: "h:2"}}, nil, 2},
		{Command{Op: OpPublish, Member: Member{ID: "n1", RaftAddr: "h:1", APIAddr: "h:7070"}}, nil, 3},
		{Command{Op: OpPublish, Member: Member{ID: "n1", RaftAddr: "h:1", APIAddr: "h:7070"}}, nil, 3},
		{Command{Op: OpPublish, Member: Member{ID: "n2", RaftAddr: "h:2", APIAddr: "h:7071"}}, nil, 4},
		{Command{Op: OpPublish, Member: Member{ID: ""}}, errAny, 4},
		{Command{Op: "bogus"}, errAny, 4},
		{Command{Op: OpSetShards, Shards: 0}, errAny, 4},
	}
	for i, st := range steps {
		err := s.Apply(st.cmd)
		if (st.err == nil) != (err == nil) || (st.err != nil && st.err != errAny && !errors.Is(err, st.err)) {
			t.Fatalf("step %d %+v: err %v, want %v", i, st.cmd, err, st.err)
		}
		if s.Version != st.version {
			t.Fatalf("step %d: version %d, want %d", i, s.Version, st.version)
		}
	}
	if m, ok := s.Member("n2"); !ok || m.APIAddr != "h:7071" || len(s.Members) != 2 || s.Members[0].ID != "n1" {
		t.Fatalf("members %+v", s.Members)
	}
	b, _ := encode(s, 7)
	back, _, err := decode(b)
	if err != nil || back.Version != s.Version || len(back.Members) != 2 {
		t.Fatalf("round trip %+v, %v", back, err)
	}
}

var errAny = errors.New("any error")
