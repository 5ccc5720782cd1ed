package raftlink

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// fill sets every field of v (recursively) to a non-zero value.
func fill(t *testing.T, v reflect.Value, rng *rand.Rand) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(0, rng.Int64N(1<<60)+1)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			fill(t, v.Field(i), rng)
		}
	case reflect.Uint64, reflect.Uint8:
		v.SetUint(uint64(rng.IntN(200) + 1))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(rng.IntN(200) + 1))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		n := 2
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := 0; i < n; i++ {
			fill(t, s.Index(i), rng)
		}
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), rng)
		v.Set(p)
	default:
		t.Fatalf("fill: field of kind %v (%v) is not carried: add it to the codec", v.Kind(), v.Type())
	}
}

// sameTimes makes the times of got equal (by instant) to want's, so
// DeepEqual compares everything else exactly.
func sameTimes(got, want reflect.Value) {
	switch got.Kind() {
	case reflect.Struct:
		if got.Type() == reflect.TypeOf(time.Time{}) {
			if got.Interface().(time.Time).Equal(want.Interface().(time.Time)) {
				got.Set(want)
			}
			return
		}
		for i := 0; i < got.NumField(); i++ {
			sameTimes(got.Field(i), want.Field(i))
		}
	case reflect.Slice:
		for i := 0; i < got.Len() && i < want.Len(); i++ {
			sameTimes(got.Index(i), want.Index(i))
		}
	case reflect.Pointer:
		if !got.IsNil() && !want.IsNil() {
			sameTimes(got.Elem(), want.Elem())
		}
	}
}

// TestCodecCoversEveryField: goal — every field of every Raft RPC crosses
// the link unchanged, including any field a later hashicorp/raft adds
// (fill sets them all by reflection, so a field the codec drops comes back
// zero and fails the comparison). Method: random non-zero structs, round
// trip, deep comparison (times by instant).
func TestCodecCoversEveryField(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	msgs := []any{
		&raft.AppendEntriesRequest{}, &raft.AppendEntriesResponse{},
		&raft.RequestVoteRequest{}, &raft.RequestVoteResponse{},
		&raft.RequestPreVoteRequest{}, &raft.RequestPreVoteResponse{},
		&raft.InstallSnapshotRequest{}, &raft.InstallSnapshotResponse{},
		&raft.TimeoutNowRequest{}, &raft.TimeoutNowResponse{},
	}
	for _, m := range msgs {
		for range 20 {
			want := reflect.New(reflect.TypeOf(m).Elem())
			fill(t, want.Elem(), rng)
			b, err := encode(nil, want.Interface())
			if err != nil {
				t.Fatalf("%T: %v", m, err)
			}
			got, err := decode(b)
			if err != nil {
				t.Fatalf("%T: decode: %v", m, err)
			}
			g := reflect.ValueOf(got)
			sameTimes(g.Elem(), want.Elem())
			if !reflect.DeepEqual(got, want.Interface()) {
				t.Fatalf("%T round trip\n got  %+v\n want %+v", m, got, want.Interface())
			}
			for n := 0; n < len(b); n++ {
				if _, err := decode(b[:n]); !errors.Is(err, errMalformed) {
					t.Fatalf("%T cut to %d of %d bytes: %v, want errMalformed", m, n, len(b), err)
				}
			}
		}
	}
}

// TestCodecEmptyAppendEntries: goal — a heartbeat (no entries, nil slices)
// stays one after the trip, so the receiver takes its fast path.
func TestCodecEmptyAppendEntries(t *testing.T) {
	hb := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte("n1")}, Term: 3}
	b, err := encode(nil, hb)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decode(b)
	if err != nil || !reflect.DeepEqual(got, hb) || !isHeartbeat(got) {
		t.Fatalf("heartbeat: %+v, %v", got, err)
	}
}
