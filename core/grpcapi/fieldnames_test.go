package grpcapi

import (
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/lockstep/lockstep/core/api"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// httpTwins pairs each proto message with the core/api type whose JSON it
// mirrors.
var httpTwins = map[string]any{
	"AcquireRequest": api.AcquireRequest{}, "AcquireResponse": api.AcquireResponse{},
	"AcquireManyRequest": api.AcquireManyRequest{}, "AcquireManyResponse": api.AcquireManyResponse{},
	"ManyLease":      api.ManyLease{},
	"ReleaseRequest": api.ReleaseRequest{}, "ReleaseResponse": api.ReleaseResponse{},
	"RenewRequest": api.RenewRequest{}, "RenewResponse": api.RenewResponse{},
	"StatusResponse": api.StatusResponse{}, "Holder": api.Holder{}, "Waiter": api.Waiter{},
	"ValidateResponse": api.ValidateResponse{},
	"ClusterResponse":  api.ClusterResponse{}, "Node": api.Node{}, "Shard": api.Shard{},
	"WatchResponse": api.WatchMessage{}, "WatchEvent": api.WatchEvent{},
	"Error": api.Error{},
}

// queryTwins are the messages whose HTTP form is a GET's query parameters
// (the routes' parameter lists in core/server).
var queryTwins = map[string][]string{
	"StatusRequest":   {"resource", "stale"},
	"ValidateRequest": {"resource", "token", "stale"},
	"ClusterRequest":  {"local"},
	"WatchRequest":    {"resource", "prefix", "start"},
}

// grpcOnly are the messages of the streams HTTP does not have.
var grpcOnly = []string{"AcquireEvent", "Queued", "KeepAliveRequest", "KeepAliveResponse"}

// enumTwins are the JSON values of each proto enum.
var enumTwins = map[string][]string{
	"Mode":     {string(api.Exclusive), string(api.Shared)},
	"Policy":   {string(api.FIFO), string(api.Throughput)},
	"Order":    {string(api.OrderCanonical)},
	"ManyKind": {string(api.KindAtomic), string(api.KindCanonical)},
	"WatchEventKind": func() []string {
		var kinds []string
		for k := range watchKinds {
			kinds = append(kinds, k)
		}
		return kinds
	}(),
	"HolderState": {string(api.HolderHeld), string(api.HolderGrace)},
}

// fieldDiff is one row of README's field table, for one message: the
// proto field grpc ("" for none) is the HTTP field http ("" for none).
type fieldDiff struct{ message, grpc, http string }

// unmatched is what one message pair leaves once equal names are paired.
type unmatched struct{ grpc, http []string }

// TestFieldNamesMatchHTTP: goal — a gRPC field has its HTTP/JSON field's
// name, or README's gRPC field table says what it is called instead (or
// that one side has no such field), so a client can move between the two
// contracts by the table. Method: walk the proto descriptors and the JSON
// tags of each message's core/api twin, pair equal names, and require the
// table's rows to account for exactly the fields left over, each once;
// every message must have a twin or be listed as gRPC-only, and every
// enum value must be its JSON string behind the enum's prefix.
func TestFieldNamesMatchHTTP(t *testing.T) {
	file := lockstepv1.File_lockstep_v1_lock_proto
	left := map[string]*unmatched{}
	msgs := file.Messages()
	for i := range msgs.Len() {
		m := msgs.Get(i)
		name := string(m.Name())
		switch {
		case httpTwins[name] != nil:
			left[name] = pairFields(m, jsonNames(reflect.TypeOf(httpTwins[name])))
		case queryTwins[name] != nil:
			left[name] = pairFields(m, queryTwins[name])
		case !slices.Contains(grpcOnly, name):
			t.Errorf("message %s has no HTTP twin in this test and is not listed as gRPC-only", name)
		}
	}
	for _, row := range readmeFieldTable(t) {
		u := left[row.message]
		switch {
		case u == nil:
			t.Errorf("README's gRPC field table names %s, which has no HTTP twin", row.message)
		case row.grpc != "" && !slices.Contains(u.grpc, row.grpc):
			t.Errorf("README's gRPC field table: %s.%s is no leftover gRPC field (same name on both sides, listed twice, or none such)", row.message, row.grpc)
		case row.http != "" && !slices.Contains(u.http, row.http):
			t.Errorf("README's gRPC field table: %s's HTTP %q is no leftover HTTP field (same name on both sides, listed twice, or none such)", row.message, row.http)
		default:
			u.grpc = slices.DeleteFunc(u.grpc, func(f string) bool { return f == row.grpc })
			u.http = slices.DeleteFunc(u.http, func(f string) bool { return f == row.http })
		}
	}
	for message, u := range left {
		for _, f := range u.grpc {
			t.Errorf("gRPC field %s.%s has no HTTP field of its name and no row in README's gRPC field table", message, f)
		}
		for _, f := range u.http {
			t.Errorf("HTTP field %q of %s has no gRPC field of its name and no row in README's gRPC field table", f, message)
		}
	}
	checkEnums(t, file.Enums())
}

// pairFields pairs m's fields with httpNames by equal name and returns
// what is left on each side.
func pairFields(m protoreflect.MessageDescriptor, httpNames []string) *unmatched {
	u := &unmatched{http: slices.Clone(httpNames)}
	fields := m.Fields()
	for i := range fields.Len() {
		name := string(fields.Get(i).Name())
		if j := slices.Index(u.http, name); j >= 0 {
			u.http = slices.Delete(u.http, j, j+1)
			continue
		}
		u.grpc = append(u.grpc, name)
	}
	return u
}

// jsonNames lists the JSON names of t's fields.
func jsonNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// readmeFieldTable parses the rows between the fieldmap markers of
// README's gRPC section, one fieldDiff per message and HTTP name ("—" in a
// field column is none).
func readmeFieldTable(t *testing.T) []fieldDiff {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "<!-- fieldmap:begin")
	body, _, ok2 := strings.Cut(rest, "<!-- fieldmap:end -->")
	if !ok || !ok2 {
		t.Fatal("README has no fieldmap table")
	}
	var out []fieldDiff
	for _, line := range strings.Split(body, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.Contains(cells[1], "`") {
			continue // the marker's tail, the header, the separator
		}
		grpcField := strings.Trim(strings.TrimSpace(cells[2]), "`")
		httpFields := splitCodes(cells[3])
		if grpcField == "—" {
			grpcField = ""
		}
		if slices.Equal(httpFields, []string{"—"}) {
			httpFields = []string{""}
		}
		for _, message := range splitCodes(cells[1]) {
			for _, http := range httpFields {
				out = append(out, fieldDiff{message, grpcField, http})
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("README's fieldmap table has no rows")
	}
	return out
}

// splitCodes splits "`a`, `b`" into a and b.
func splitCodes(cell string) []string {
	var out []string
	for _, part := range strings.Split(cell, ",") {
		if p := strings.Trim(strings.TrimSpace(part), "`"); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// checkEnums checks that each enum's values, but *_UNSPECIFIED, are its
// JSON values upper-cased behind the enum's prefix (MODE_SHARED: shared).
func checkEnums(t *testing.T, enums protoreflect.EnumDescriptors) {
	t.Helper()
	for i := range enums.Len() {
		e := enums.Get(i)
		want, ok := enumTwins[string(e.Name())]
		if !ok {
			t.Errorf("enum %s has no JSON values in this test", e.Name())
			continue
		}
		prefix := strings.ToUpper(snake(string(e.Name()))) + "_"
		var got []string
		values := e.Values()
		for j := range values.Len() {
			v := string(values.Get(j).Name())
			if v == prefix+"UNSPECIFIED" {
				continue
			}
			if !strings.HasPrefix(v, prefix) {
				t.Errorf("enum %s value %s lacks the prefix %s", e.Name(), v, prefix)
				continue
			}
			got = append(got, strings.ToLower(strings.TrimPrefix(v, prefix)))
		}
		sort.Strings(got)
		want = slices.Clone(want)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("enum %s carries %v, the JSON values are %v", e.Name(), got, want)
		}
	}
}

// snake turns WatchEventKind into watch_event_kind.
func snake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if r >= 'A' && r <= 'Z' && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return b.String()
}
