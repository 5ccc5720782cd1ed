package lock

import ("testing";"time")

func TestZZDebug(t *testing.T) {
	cfg := propConfig()
	s, _ := New(cfg)
	m := newRefModel(cfg)
	ms := func(v int64) int64 { return v * int64(time.Millisecond) }
	id := func(n byte) LeaseID { var l LeaseID; l[0]=0xa0; l[15]=n; return l }
	acq := func(at int64, res, client, req string, n byte, ttl, wait int64) Command {
		return Command{Op: OpAcquire, Mono: ms(at), Resource: res, ClientID: client, RequestID: req, LeaseID: id(n), Mode: Exclusive, TTLMs: ttl, WaitMs: wait}
	}
	cmds := []Command{
		acq(0, "r1", "alice", "", 1, 1, 0),
		{Op: OpStatus, Resource: "r1"},
		acq(0, "r2", "alice", "", 2, 1, 0),
		acq(0, "r1", "alice", "", 3, 1, 0),
		acq(0, "r1", "alice", "", 4, 1, 0),
		acq(0, "r1", "alice", "", 5, 1, 0),
		{Op: OpRelease, Resource: "r1", LeaseID: id(1)},
		acq(0, "r1", "alice", "", 6, 1, 0),
		acq(0, "r1", "alice", "", 7, 1, 0),
		{Op: OpRelease, Resource: "r1", LeaseID: id(1)},
		acq(0, "r1", "alice", "", 8, 1, 0),
		acq(0, "r1", "alice", "", 9, 0, 1),
		{Op: OpRelease, Resource: "r1", LeaseID: id(1)},
		{Op: OpCancel, Resource: "r1", LeaseID: id(6)},
		acq(3, "r1", "bob\x00x", "", 10, 2, 0),
		{Op: OpTick, Mono: ms(18)},
		acq(53, "r2", "alice", "", 11, 1, 0),
		acq(53, "r2", "bob\x00x", "x\x001", 12, 1, 0),
	}
	for i, c := range cmds {
		e := Entry{Index: uint64(i+1), Term: 1, Command: c}
		res, _ := s.Apply(e)
		mres, _ := m.apply(e)
		t.Logf("%d %s\n  %+v\n  %+v\n  dedupe=%d model=%d order=%q", i+1, entryText(e), res, mres, s.Metrics().DedupeEntries, len(m.dedupe), s.dedupe.order)
	}
}
