package codec

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/lockstep/lockstep/core/lock"
)

// Commands for the tests, as the lock package's own tests spell them.
func acq(res string, label byte, mode lock.Mode, ttlMs, waitMs int64) lock.Command {
	return lock.Command{Op: lock.OpAcquire, Resource: res, ClientID: "client-" + string(label),
		LeaseID: lock.LeaseID{label}, Mode: mode, TTLMs: ttlMs, WaitMs: waitMs}
}

func as(cmd lock.Command, clientID, requestID string) lock.Command {
	cmd.ClientID, cmd.RequestID = clientID, requestID
	return cmd
}

func rel(res string, label byte) lock.Command {
	return lock.Command{Op: lock.OpRelease, Resource: res, LeaseID: lock.LeaseID{label}}
}

func renew(res string, label byte, ttlMs int64) lock.Command {
	return lock.Command{Op: lock.OpRenew, Resource: res, LeaseID: lock.LeaseID{label}, TTLMs: ttlMs}
}

func cancel(res string, label byte) lock.Command {
	return lock.Command{Op: lock.OpCancel, Resource: res, LeaseID: lock.LeaseID{label}}
}

func status(res string) lock.Command { return lock.Command{Op: lock.OpStatus, Resource: res} }

// anyCommand draws commands over the whole input space, not only valid
// ones: the codec must carry any bytes the proposer wrote.
func anyCommand() *rapid.Generator[lock.Command] {
	return rapid.Custom(func(t *rapid.T) lock.Command {
		var id, owner lock.LeaseID
		copy(id[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "lease"))
		copy(owner[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "owner"))
		return lock.Command{
			Op:          lock.Op(rapid.Uint8().Draw(t, "op")),
			Mono:        rapid.Int64().Draw(t, "mono"),
			Resource:    string(rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "resource")),
			ClientID:    rapid.String().Draw(t, "client"),
			RequestID:   rapid.StringN(0, 10, -1).Draw(t, "request"),
			LeaseID:     id,
			Mode:        lock.Mode(rapid.Uint8().Draw(t, "mode")),
			Policy:      lock.Policy(rapid.Uint8().Draw(t, "policy")),
			TTLMs:       rapid.Int64().Draw(t, "ttl"),
			WaitMs:      rapid.Int64().Draw(t, "wait"),
			Owner:       owner,
			Host:        rapid.StringN(0, 8, -1).Draw(t, "host"),
			Incarnation: rapid.Uint64().Draw(t, "incarnation"),
			Suspects:    rapid.SliceOfN(rapid.StringN(0, 4, -1), 0, 3).Draw(t, "suspects"),
			CallerGone:  rapid.Bool().Draw(t, "callerGone"),
			Quota: lock.Quota{Held: rapid.Uint32().Draw(t, "qheld"), Queued: rapid.Uint32().Draw(t, "qqueued"),
				ClientHeld: rapid.Uint32().Draw(t, "qcheld"), ClientQueued: rapid.Uint32().Draw(t, "qcqueued")},
			Deadlock: rapid.Bool().Draw(t, "deadlock"),
			GraceMs:  rapid.Int64().Draw(t, "grace"),
			Permits:  rapid.Uint32().Draw(t, "permits"),
		}
	})
}

// TestCommandRoundTrip encodes random commands, also after a prefix already
// in the buffer, and requires decoding to give them back exactly.
func TestCommandRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cmd := anyCommand().Draw(t, "cmd")
		prefix := rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "prefix")
		buf := AppendCommand(bytes.Clone(prefix), &cmd)
		if !bytes.Equal(buf[:len(prefix)], prefix) {
			t.Fatalf("AppendCommand overwrote the prefix")
		}
		got, err := DecodeCommand(buf[len(prefix):])
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(cmd.Suspects) == 0 {
			cmd.Suspects = nil // decoding gives nil for none
		}
		if !reflect.DeepEqual(got, cmd) {
			t.Fatalf("round trip\n got  %+v\n want %+v", got, cmd)
		}
	})
}

// TestDecodeCommandCorrupt feeds every truncation of valid encodings, a
// trailing byte, a wrong version and an oversized length, and requires
// lock.ErrCorrupt for each.
func TestDecodeCommandCorrupt(t *testing.T) {
	cmds := []lock.Command{
		{},
		acq("resource", 'a', lock.Exclusive, 100, 5),
		as(acq("r", 'b', lock.Shared, 1, 0), "client", "request"),
		{Op: lock.OpTick, Mono: -1 << 62},
	}
	for _, cmd := range cmds {
		enc := AppendCommand(nil, &cmd)
		for n := 0; n < len(enc); n++ {
			if _, err := DecodeCommand(enc[:n]); !errors.Is(err, lock.ErrCorrupt) {
				t.Errorf("%v truncated to %d of %d bytes: err %v, want lock.ErrCorrupt", cmd.Op, n, len(enc), err)
			}
		}
		if _, err := DecodeCommand(append(bytes.Clone(enc), 0)); !errors.Is(err, lock.ErrCorrupt) {
			t.Errorf("%v with a trailing byte: err %v, want lock.ErrCorrupt", cmd.Op, err)
		}
		wrong := bytes.Clone(enc)
		wrong[0] = commandVersion + 1
		if _, err := DecodeCommand(wrong); !errors.Is(err, lock.ErrCorrupt) {
			t.Errorf("%v with version %d: err %v, want lock.ErrCorrupt", cmd.Op, wrong[0], err)
		}
	}
	// A resource length of 2^63 followed by nothing must not allocate or panic.
	huge := AppendCommand(nil, &lock.Command{})
	huge = huge[:len(huge)-3] // drop the three empty string lengths
	huge = append(huge, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01)
	if _, err := DecodeCommand(huge); !errors.Is(err, lock.ErrCorrupt) {
		t.Errorf("oversized string length: err %v, want lock.ErrCorrupt", err)
	}
}

// fuzzCommandSeeds are encodings of typical commands.
func fuzzCommandSeeds() [][]byte {
	cmds := []lock.Command{
		acq("orders/42", 'a', lock.Exclusive, 30_000, 0),
		as(acq("r", 'b', lock.Shared, 1, 600_000), "client", "req-1"),
		renew("r", 'a', 0),
		rel("r", 'a'),
		cancel("r", 'b'),
		status("r"),
		{Op: lock.OpTick, Mono: 1 << 40},
	}
	var seeds [][]byte
	for i := range cmds {
		seeds = append(seeds, AppendCommand(nil, &cmds[i]))
	}
	return append(seeds, nil, []byte{commandVersion})
}

// FuzzDecodeCommand requires decoding arbitrary bytes never to panic, to fail
// only with lock.ErrCorrupt, and whatever decodes to survive re-encoding.
func FuzzDecodeCommand(f *testing.F) {
	for _, seed := range fuzzCommandSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cmd, err := DecodeCommand(b)
		if err != nil {
			if !errors.Is(err, lock.ErrCorrupt) {
				t.Fatalf("error %v does not wrap lock.ErrCorrupt", err)
			}
			return
		}
		again, err := DecodeCommand(AppendCommand(nil, &cmd))
		if err != nil || !reflect.DeepEqual(again, cmd) {
			t.Fatalf("re-encoding %+v gave %+v, %v", cmd, again, err)
		}
	})
}

// TestTrailingBytesReported: goal — the error for extra bytes says how
// many there are (it is what an operator reads when a log will not load).
func TestTrailingBytesReported(t *testing.T) {
	cmd := acq("r", 'a', lock.Exclusive, 100, 0)
	if _, err := DecodeCommand(append(AppendCommand(nil, &cmd), 1, 2)); err == nil || !strings.Contains(err.Error(), ": 2 trailing bytes") {
		t.Errorf("command: %v", err)
	}
}

// TestQuotaCodecCompatible: goal — a command without a quota is written
// as version 3 (byte-identical to what members before quotas wrote and
// read), one with a quota as version 4, one with a grace or permits as
// version 5, and the fields survive decoding.
func TestQuotaCodecCompatible(t *testing.T) {
	plain := acq("a:1", 'a', lock.Exclusive, 1000, 0)
	if b := AppendCommand(nil, &plain); b[0] != 3 {
		t.Fatalf("no quota: version %d, want 3", b[0])
	}
	limited := plain
	limited.Quota = lock.Quota{Held: 1, ClientQueued: 7}
	b := AppendCommand(nil, &limited)
	got, err := DecodeCommand(b)
	if b[0] != 4 || err != nil || got.Quota != limited.Quota {
		t.Fatalf("quota: version %d, decoded %+v, %v", b[0], got.Quota, err)
	}
	for _, c := range []lock.Command{{GraceMs: 250}, {Permits: 3}} {
		c.Op, c.Resource, c.Quota = plain.Op, plain.Resource, limited.Quota
		b := AppendCommand(nil, &c)
		got, err := DecodeCommand(b)
		if b[0] != 5 || err != nil || got.GraceMs != c.GraceMs || got.Permits != c.Permits || got.Quota != c.Quota {
			t.Fatalf("grace %d permits %d: version %d, decoded %+v, %v", c.GraceMs, c.Permits, b[0], got, err)
		}
	}
}

// TestManyCommandCodec: goal — an acquire_many's Resources survive the
// command encoding.
func TestManyCommandCodec(t *testing.T) {
	cmd := lock.Command{Op: lock.OpAcquireMany, Resources: []string{"p", "q"}, LeaseID: lock.LeaseID{'m'},
		Mode: lock.Shared, TTLMs: 50, WaitMs: 10, ClientID: "c", RequestID: "r"}
	got, err := DecodeCommand(AppendCommand(nil, &cmd))
	if err != nil || !reflect.DeepEqual(got, cmd) {
		t.Fatalf("command round trip: %+v, %v", got, err)
	}
}
