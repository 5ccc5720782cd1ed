package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
)

// stableFileName holds raft's term and vote: [u32 crc32c][payload] with
// payload = u32 count, then count × (u32 klen, key, u32 vlen, value) sorted
// by key. It is small and rewritten whole, atomically, on every Set.
const stableFileName = "raft.stable"

// stableStore is the raft.StableStore half of Store. Raft writes it only on
// term and vote changes, so a full atomic rewrite per Set is cheap enough
// and needs no log or recovery logic.
type stableStore struct {
	mu     sync.Mutex
	path   string
	noSync bool
	closed bool
	kv     map[string][]byte
}

// openStable opens the stable store kept in the file at path.
func openStable(path string, noSync bool) (*stableStore, error) {
	// A leftover temporary file is an interrupted Set that never took
	// effect.
	if err := os.Remove(path + tmpSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove stale %s: %w", path+tmpSuffix, err)
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &stableStore{path: path, noSync: noSync, kv: map[string][]byte{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	kv, err := decodeStable(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &stableStore{path: path, noSync: noSync, kv: kv}, nil
}

func (s *stableStore) set(key, val []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	next := make(map[string][]byte, len(s.kv)+1)
	for k, v := range s.kv {
		next[k] = v
	}
	next[string(key)] = slices.Clone(val)
	if err := writeFileAtomic(s.path, encodeStable(next), s.noSync); err != nil {
		return fmt.Errorf("set %q: %w", key, err)
	}
	s.kv = next
	return nil
}

func (s *stableStore) get(key []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	v, ok := s.kv[string(key)]
	if !ok {
		return nil, ErrKeyNotFound
	}
	return slices.Clone(v), nil
}

func (s *stableStore) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

func encodeStable(kv map[string][]byte) []byte {
	keys := make([]string, 0, len(kv))
	n := 4 + 4
	for k, v := range kv {
		keys = append(keys, k)
		n += 8 + len(k) + len(v)
	}
	slices.Sort(keys)
	out := make([]byte, 8, n)
	binary.LittleEndian.PutUint32(out[4:], uint32(len(keys)))
	for _, k := range keys {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(k)))
		out = append(out, k...)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(kv[k])))
		out = append(out, kv[k]...)
	}
	binary.LittleEndian.PutUint32(out, crc32Castagnoli(out[4:]))
	return out
}

func decodeStable(raw []byte) (map[string][]byte, error) {
	if len(raw) < 8 {
		return nil, fmt.Errorf("stable file of %d bytes: %w", len(raw), ErrCorrupt)
	}
	if crc32Castagnoli(raw[4:]) != binary.LittleEndian.Uint32(raw) {
		return nil, fmt.Errorf("stable file checksum mismatch: %w", ErrCorrupt)
	}
	p := raw[8:]
	count := binary.LittleEndian.Uint32(raw[4:])
	// Every pair takes at least its two length fields.
	if uint64(count) > uint64(len(p))/8 {
		return nil, fmt.Errorf("stable file claims %d keys in %d bytes: %w", count, len(p), ErrCorrupt)
	}
	kv := make(map[string][]byte, count)
	off := 0
	for i := range count {
		k, next, err := getField(p, off)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i, err)
		}
		v, next, err := getField(p, next)
		if err != nil {
			return nil, fmt.Errorf("value %d: %w", i, err)
		}
		kv[string(k)], off = slices.Clone(v), next
	}
	if off != len(p) {
		return nil, fmt.Errorf("%d trailing bytes in stable file: %w", len(p)-off, ErrCorrupt)
	}
	return kv, nil
}

// setUint64 stores val under key with set, as 8 big-endian bytes.
func setUint64(set func(key, val []byte) error, key []byte, val uint64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], val)
	return set(key, b[:])
}

// getUint64 reads key with get and decodes what setUint64 stored.
func getUint64(get func(key []byte) ([]byte, error), key []byte) (uint64, error) {
	v, err := get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("wal: key %q holds %d bytes, not a uint64", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
