package codec

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/lockstep/lockstep/core/lock"
)

// TestEntryRoundTrip: goal — a batch entry gives back every command in
// order, byte for byte as the proposer encoded it, and each decodes with
// the leader's stamp in place of its own Mono and Suspects. Method: random
// commands and stamps, encoded after a prefix already in the buffer.
func TestEntryRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cmds := rapid.SliceOfN(anyCommand(), 0, 20).Draw(t, "cmds")
		stamp := Stamp{Mono: rapid.Int64().Draw(t, "mono"), Suspects: rapid.SliceOfN(rapid.StringN(0, 4, -1), 0, 3).Draw(t, "suspects")}
		var encoded [][]byte
		for i := range cmds {
			encoded = append(encoded, AppendCommand(nil, &cmds[i]))
		}
		prefix := rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "prefix")
		buf := AppendEntry(bytes.Clone(prefix), stamp, encoded)
		if !bytes.Equal(buf[:len(prefix)], prefix) {
			t.Fatalf("AppendEntry overwrote the prefix")
		}
		e, err := DecodeEntry(buf[len(prefix):])
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if e.Single || len(e.Commands) != len(cmds) {
			t.Fatalf("single %v, %d commands, want a batch of %d", e.Single, len(e.Commands), len(cmds))
		}
		for i := range cmds {
			if !bytes.Equal(e.Commands[i], encoded[i]) {
				t.Fatalf("command %d: bytes changed", i)
			}
			got, err := e.Command(i)
			if err != nil {
				t.Fatalf("command %d: %v", i, err)
			}
			want := cmds[i]
			want.Mono, want.Suspects = stamp.Mono, stamp.Suspects
			if len(want.Suspects) == 0 {
				want.Suspects = nil
			}
			if len(got.Suspects) == 0 {
				got.Suspects = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("command %d\n got  %+v\n want %+v", i, got, want)
			}
		}
	})
}

// TestEntrySingleCommand: goal — entries written before batching (one
// command, carrying its own stamp) still decode as that command.
func TestEntrySingleCommand(t *testing.T) {
	cmd := as(acq("r", 'a', lock.Shared, 100, 5), "c", "q")
	cmd.Mono, cmd.Suspects = 42, []string{"n3"}
	e, err := DecodeEntry(AppendCommand(nil, &cmd))
	if err != nil || !e.Single || len(e.Commands) != 1 {
		t.Fatalf("decode: %+v %v", e, err)
	}
	if got, err := e.Command(0); err != nil || !reflect.DeepEqual(got, cmd) {
		t.Fatalf("command: %+v %v, want %+v", got, err, cmd)
	}
}

// TestEntryCorrupt: goal — a damaged header fails the whole entry with
// ErrCorrupt (every truncation, a trailing byte, a count beyond the bound),
// while a damaged command inside a sound entry fails only that command, so
// every replica skips the same one and applies the rest.
func TestEntryCorrupt(t *testing.T) {
	a, b := acq("r", 'a', lock.Exclusive, 100, 0), rel("r", 'a')
	enc := AppendEntry(nil, Stamp{Mono: 7, Suspects: []string{"n2"}}, [][]byte{AppendCommand(nil, &a), AppendCommand(nil, &b)})
	for n := 0; n < len(enc); n++ {
		if _, err := DecodeEntry(enc[:n]); !errors.Is(err, lock.ErrCorrupt) {
			t.Errorf("truncated to %d of %d bytes: err %v, want ErrCorrupt", n, len(enc), err)
		}
	}
	if _, err := DecodeEntry(append(bytes.Clone(enc), 0)); !errors.Is(err, lock.ErrCorrupt) {
		t.Errorf("trailing byte: err %v, want ErrCorrupt", err)
	}
	many := make([][]byte, MaxEntryCommands+1)
	for i := range many {
		many[i] = []byte{3}
	}
	if _, err := DecodeEntry(AppendEntry(nil, Stamp{}, many)); !errors.Is(err, lock.ErrCorrupt) {
		t.Errorf("%d commands: err %v, want ErrCorrupt", len(many), err)
	}
	damaged := AppendEntry(nil, Stamp{Mono: 7}, [][]byte{AppendCommand(nil, &a), {99, 1, 2}, AppendCommand(nil, &b)})
	e, err := DecodeEntry(damaged)
	if err != nil || len(e.Commands) != 3 {
		t.Fatalf("entry with a damaged command: %+v %v", e, err)
	}
	if _, err := e.Command(1); !errors.Is(err, lock.ErrCorrupt) {
		t.Errorf("damaged command: err %v, want ErrCorrupt", err)
	}
	for _, i := range []int{0, 2} {
		if _, err := e.Command(i); err != nil {
			t.Errorf("command %d beside a damaged one: %v", i, err)
		}
	}
}

// FuzzDecodeEntry requires decoding arbitrary bytes as an entry never to
// panic and to fail only with ErrCorrupt, for the entry and each command.
func FuzzDecodeEntry(f *testing.F) {
	a := acq("r", 'a', lock.Exclusive, 100, 0)
	f.Add(AppendEntry(nil, Stamp{Mono: 1}, [][]byte{AppendCommand(nil, &a)}))
	f.Add(AppendCommand(nil, &a))
	f.Add([]byte{entryBatch})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEntry(b)
		if err != nil {
			if !errors.Is(err, lock.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		for i := range e.Commands {
			if _, err := e.Command(i); err != nil && !errors.Is(err, lock.ErrCorrupt) {
				t.Fatalf("command %d: error %v does not wrap ErrCorrupt", i, err)
			}
		}
	})
}
