package wal_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockstep/lockstep/core/wal"
)

// TestStable sets byte and uint64 keys, overwrites one, and checks Get,
// GetUint64 and not-found (with the exact text raft matches) live and after
// a reopen.
func TestStable(t *testing.T) {
	forBackends(t, testStable)
}

func testStable(t *testing.T, b backend, dir string) {
	s := b.open(t, dir, false)
	if _, err := s.Get([]byte("missing")); err == nil || err.Error() != "not found" {
		t.Fatalf("Get(missing) = %v, want error text \"not found\"", err)
	}
	if _, err := s.GetUint64([]byte("missing")); !errors.Is(err, wal.ErrKeyNotFound) || err.Error() != "not found" {
		t.Fatalf("GetUint64(missing) = %v, want ErrKeyNotFound", err)
	}
	steps := []struct {
		key string
		val []byte
		num uint64
	}{
		{key: "LastVoteCand", val: []byte("node-2")},
		{key: "CurrentTerm", num: 3},
		{key: "LastVoteTerm", num: 1<<64 - 1},
		{key: "CurrentTerm", num: 4},
		{key: "empty", val: []byte{}},
	}
	for _, st := range steps {
		var err error
		if st.val != nil {
			err = s.Set([]byte(st.key), st.val)
		} else {
			err = s.SetUint64([]byte(st.key), st.num)
		}
		if err != nil {
			t.Fatalf("set %s: %v", st.key, err)
		}
	}
	check := func(s logStore) {
		t.Helper()
		if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "node-2" {
			t.Fatalf("Get(LastVoteCand) = %q, %v", v, err)
		}
		if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 4 {
			t.Fatalf("GetUint64(CurrentTerm) = %d, %v; want 4", v, err)
		}
		if v, err := s.GetUint64([]byte("LastVoteTerm")); err != nil || v != 1<<64-1 {
			t.Fatalf("GetUint64(LastVoteTerm) = %d, %v", v, err)
		}
		if v, err := s.Get([]byte("empty")); err != nil || len(v) != 0 {
			t.Fatalf("Get(empty) = %q, %v", v, err)
		}
		if _, err := s.GetUint64([]byte("LastVoteCand")); err == nil {
			t.Fatal("GetUint64 of a 6-byte value succeeded")
		}
	}
	check(s)
	// Get must hand out a copy.
	v, _ := s.Get([]byte("LastVoteCand"))
	v[0] = 'X'
	check(s)
	s = b.reopen(t, s, dir, false)
	check(s)
}

// TestStableCorrupt flips a byte of the stable file and checks Open fails
// with ErrCorrupt.
func TestStableCorrupt(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, wal.Options{})
	if err := s.Set([]byte("CurrentTerm"), bytes.Repeat([]byte{1}, 8)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "raft.stable")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-1] ^= 0x10
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := wal.Open(dir, wal.Options{Logger: quiet})
	if err == nil {
		_ = s2.Close()
	}
	if !errors.Is(err, wal.ErrCorrupt) {
		t.Fatalf("Open = %v, want ErrCorrupt", err)
	}
}
