package sim

import (
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Goal: copyMessage copies every field of every raft RPC struct and shares no
// memory, so a raft upgrade that adds a reference field fails here. Method:
// fill each struct by reflection with non-zero values everywhere, copy it,
// compare with DeepEqual and walk both values for shared backing arrays.
func TestCopyMessageIsDeep(t *testing.T) {
	for _, v := range []any{
		&raft.AppendEntriesRequest{}, &raft.AppendEntriesResponse{},
		&raft.RequestVoteRequest{}, &raft.RequestVoteResponse{},
		&raft.RequestPreVoteRequest{}, &raft.RequestPreVoteResponse{},
		&raft.InstallSnapshotRequest{}, &raft.InstallSnapshotResponse{},
		&raft.TimeoutNowRequest{}, &raft.TimeoutNowResponse{},
	} {
		t.Run(reflect.TypeOf(v).Elem().Name(), func(t *testing.T) {
			fill(t, reflect.ValueOf(v).Elem())
			c := copyMessage(v)
			if !reflect.DeepEqual(v, c) {
				t.Fatalf("copy differs:\n%+v\n%+v", v, c)
			}
			assertDisjoint(t, reflect.ValueOf(v).Elem(), reflect.ValueOf(c).Elem(), reflect.TypeOf(v).Elem().Name())
		})
	}
}

// Goal: a non-raft type is refused loudly. Method: copy a struct{} and
// expect a panic.
func TestCopyMessageRejectsUnknownType(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("unknown type copied")
		}
	}()
	copyMessage(struct{}{})
}

// fill sets every field reachable from v to a non-zero value.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(time.Unix(1, 2)))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i))
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(t, v.Index(i))
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(3)
	case reflect.String:
		v.SetString("s")
	default:
		t.Fatalf("fill: unhandled kind %s", v.Kind())
	}
}

// assertDisjoint fails if a and b share a slice backing array or a pointer target.
func assertDisjoint(t *testing.T, a, b reflect.Value, path string) {
	t.Helper()
	if a.Type() == reflect.TypeFor[time.Time]() {
		return // a value; its *Location is immutable
	}
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				assertDisjoint(t, a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name)
			}
		}
	case reflect.Slice:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			t.Errorf("%s shares its backing array", path)
		}
		for i := range a.Len() {
			assertDisjoint(t, a.Index(i), b.Index(i), path+"[]")
		}
	case reflect.Pointer:
		if !a.IsNil() && a.Pointer() == b.Pointer() {
			t.Errorf("%s shares its target", path)
		}
		if !a.IsNil() {
			assertDisjoint(t, a.Elem(), b.Elem(), path)
		}
	}
}
