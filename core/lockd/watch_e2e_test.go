package lockd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/grpcapi"
	"github.com/lockstep/lockstep/core/node"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

// httpWatch opens GET /lock/watch?query on member m and reads its header.
func httpWatch(ctx context.Context, t *testing.T, c *grpcCluster, m int, query string) (*bufio.Scanner, api.WatchMessage, func()) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.members[m].Addr()+api.PathWatch+"?"+query, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("watch %s: %v %v", query, resp, err)
	}
	lines := bufio.NewScanner(resp.Body)
	var head api.WatchMessage
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &head) != nil {
		t.Fatalf("watch %s: header %q %v", query, lines.Text(), lines.Err())
	}
	return lines, head, func() { _ = resp.Body.Close() }
}

// watchedGrants reads a gRPC watch until it has seen want grants in total
// (counting seen), checking that indexes rise; it returns the grants'
// tokens and the last message's shard and index.
func watchedGrants(t *testing.T, stream lockstepv1.Lock_WatchClient, seen, want int, prev uint64) (tokens []uint64, shard int32, last uint64) {
	t.Helper()
	last = prev
	for seen+len(tokens) < want {
		m, err := stream.Recv()
		if err != nil {
			t.Fatalf("watch after %d grants: %v", seen+len(tokens), err)
		}
		if m.GetIndex() <= last {
			t.Fatalf("entry index %d after %d: not in log order, or repeated", m.GetIndex(), last)
		}
		shard, last = m.GetShard(), m.GetIndex()
		for _, ev := range m.GetEvents() {
			if ev.GetKind() == lockstepv1.WatchEventKind_WATCH_EVENT_KIND_GRANT {
				tokens = append(tokens, ev.GetFencingToken())
			}
		}
	}
	return tokens, shard, last
}

// Goal: a gRPC watcher sees every grant of a contended lock, in order, and
// resumes after a reconnect (to another member) without a gap or a
// duplicate. Method: four clients take and release "job" three times each
// through different members, waiting in its queue; the watcher on member
// 3 reads half the grants and hangs up; a new watch on member 1 starts at
// the index after the last message read. Together they must show exactly
// the clients' fencing tokens, ascending.
func TestWatchSeesEveryGrantAndResumesOverGRPC(t *testing.T) {
	c := startGRPCCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wctx, hangUp := context.WithCancel(ctx)
	first, err := c.clients[2].Watch(wctx, &lockstepv1.WatchRequest{Resource: "job"})
	if err != nil {
		t.Fatal(err)
	}
	head, err := first.Recv()
	if err != nil || len(head.GetStartIndex()) != 1 {
		t.Fatalf("header: %v %v, want one shard's start index", head, err)
	}
	var shard int32
	var start uint64
	for sh, idx := range head.GetStartIndex() {
		shard, start = sh, idx
	}
	const clients, rounds = 4, 3
	var mu sync.Mutex
	var granted []uint64
	var wg sync.WaitGroup
	for k := range clients {
		wg.Go(func() {
			cl := c.clients[k%3]
			for range rounds {
				res, err := cl.Acquire(ctx, &lockstepv1.AcquireRequest{Resource: "job", ClientId: string(rune('A' + k)), TtlMs: 60_000, WaitMs: 30_000})
				if err != nil || !res.GetGranted() {
					t.Errorf("client %d: %v %v", k, res, err)
					return
				}
				mu.Lock()
				granted = append(granted, res.GetFencingToken())
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
				if _, err := cl.Release(ctx, &lockstepv1.ReleaseRequest{Resource: "job", LeaseId: res.GetLeaseId()}); err != nil {
					t.Errorf("client %d release: %v", k, err)
					return
				}
			}
		})
	}
	got, sh, last := watchedGrants(t, first, 0, clients*rounds/2, start-1)
	if sh != shard {
		t.Fatalf("events from shard %d, header named %d", sh, shard)
	}
	hangUp()
	wg.Wait()
	second, err := c.clients[0].Watch(ctx, &lockstepv1.WatchRequest{Resource: "job", StartIndex: map[int32]uint64{shard: last + 1}})
	if err != nil {
		t.Fatal(err)
	}
	if head, err := second.Recv(); err != nil || head.GetStartIndex()[shard] != last+1 {
		t.Fatalf("resumed header: %v %v, want start %d", head, err, last+1)
	}
	rest, _, _ := watchedGrants(t, second, len(got), clients*rounds, last)
	got = append(got, rest...)
	slices.Sort(granted)
	if !slices.Equal(got, granted) {
		t.Fatalf("watched grants %v, clients were granted %v", got, granted)
	}
}

// Goal: a prefix watch over HTTP covers every shard, each shard's entries
// in log order. Method: watch prefix "p/" as JSON lines on member 2, take
// nine p/ locks through member 1 (they land on several of the three
// shards) and one lock outside the prefix; read until nine grants.
func TestWatchPrefixOverHTTPCoversEveryShard(t *testing.T) {
	c := startGRPCCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lines, head, done := httpWatch(ctx, t, c, 1, "resource=p/&prefix=true")
	defer done()
	if len(head.Start) != 3 {
		t.Fatalf("header %+v: want a start index for each of 3 shards", head)
	}
	names := []string{"other", "p/0", "p/1", "p/2", "p/3", "p/4", "p/5", "p/6", "p/7", "p/8"}
	for _, r := range names {
		var out api.AcquireResponse
		if code, e := httpCall(t, http.MethodPost, "http://"+c.members[0].Addr()+api.PathAcquire,
			api.AcquireRequest{Resource: r, ClientID: "A", TTLMs: 60_000}, &out); code != 200 || !out.Granted {
			t.Fatalf("acquire %s: %d %+v", r, code, e)
		}
	}
	last := map[int]uint64{}
	var seen []string
	for len(seen) < len(names)-1 && lines.Scan() {
		var m api.WatchMessage
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil || m.Error != nil {
			t.Fatalf("line %q: %v", lines.Text(), err)
		}
		if m.Index <= last[m.Shard] || m.Index < head.Start[m.Shard] {
			t.Fatalf("shard %d: index %d after %d (start %d)", m.Shard, m.Index, last[m.Shard], head.Start[m.Shard])
		}
		last[m.Shard] = m.Index
		for _, ev := range m.Events {
			if ev.Kind == "grant" {
				seen = append(seen, ev.Resource)
			}
		}
	}
	slices.Sort(seen)
	if !slices.Equal(seen, names[1:]) || len(last) < 2 {
		t.Fatalf("grants seen %v on shards %v; want the nine p/ locks from several shards", seen, last)
	}
}

// Goal: a resume older than the member's history is refused as compacted,
// the same way over both APIs (gRPC OUT_OF_RANGE, HTTP 410), never served
// with a gap. Method: a 4-event history per shard, 10 acquire/release
// pairs on one lock, then resume from the shard's first index.
func TestWatchResumeTooOldIsCompacted(t *testing.T) {
	c := startGRPCClusterTuned(t, func(cfg *node.Config) { cfg.WatchHistory = 4 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	probe, err := c.clients[0].Watch(ctx, &lockstepv1.WatchRequest{Resource: "r"})
	if err != nil {
		t.Fatal(err)
	}
	head, err := probe.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var shard int32
	var start uint64
	for sh, idx := range head.GetStartIndex() {
		shard, start = sh, idx
	}
	for range 10 {
		res, err := c.clients[0].Acquire(ctx, &lockstepv1.AcquireRequest{Resource: "r", ClientId: "A", TtlMs: 60_000})
		if err != nil || !res.GetGranted() {
			t.Fatalf("acquire: %v %v", res, err)
		}
		if _, err := c.clients[0].Release(ctx, &lockstepv1.ReleaseRequest{Resource: "r", LeaseId: res.GetLeaseId()}); err != nil {
			t.Fatal(err)
		}
	}
	// Every member applies the same entries; wait until member 1 (the
	// one both resumes ask) has applied them all.
	waitFor(t, func() bool {
		st, err := c.clients[0].Status(ctx, &lockstepv1.StatusRequest{Resource: "r", Stale: true})
		return err == nil && len(st.GetHolders()) == 0
	})
	stream, err := c.clients[0].Watch(ctx, &lockstepv1.WatchRequest{Resource: "r", StartIndex: map[int32]uint64{shard: start}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = stream.Recv()
	if grpcstatus.Code(err) != codes.OutOfRange || grpcapi.APIError(err).Code != api.CodeCompacted {
		t.Fatalf("gRPC resume from %d: %v, want OUT_OF_RANGE compacted", start, err)
	}
	q := url.Values{"resource": {"r"}, "start": {api.FormatWatchStart(map[int]uint64{int(shard): start})}}
	code, e := httpCall(t, http.MethodGet, "http://"+c.members[0].Addr()+api.PathWatch+"?"+q.Encode(), nil, nil)
	if code != http.StatusGone || e.Code != api.CodeCompacted {
		t.Fatalf("HTTP resume from %d: %d %+v, want 410 compacted", start, code, e)
	}
}

// Goal: a member stopping ends its watches cleanly instead of waiting on
// them (a watch never goes idle, and graceful stops wait for idle): the
// watchers see their streams end and can resume elsewhere. Method: a gRPC
// and an HTTP watch open on member 3, then Stop with a 20 s budget: it
// must return no error (a stop that waited out its budget returns one),
// the gRPC stream must end with EOF, and the HTTP body must end.
func TestStopEndsWatches(t *testing.T) {
	c := startGRPCCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := c.clients[2].Watch(ctx, &lockstepv1.WatchRequest{Resource: "job"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatalf("gRPC header: %v", err)
	}
	lines, _, done := httpWatch(ctx, t, c, 2, "resource=job")
	defer done()
	sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
	defer scancel()
	if err := c.members[2].Stop(sctx); err != nil {
		t.Fatalf("stop with open watches: %v", err)
	}
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("gRPC watch after stop: %v, want EOF", err)
	}
	for lines.Scan() {
		t.Fatalf("HTTP watch line after stop: %q", lines.Text())
	}
}

// Goal: a watch whose start is beyond the end of its shard's log is
// refused at once with a clear invalid_argument naming the end, over both
// APIs, instead of waiting for an entry that may never come; a start at
// the end is a watch from now. Method: find the shard of "r" and
// its last committed index from the header of a watch from now; ask for a
// start a million past it (HTTP 400, gRPC INVALID_ARGUMENT, both within
// a few seconds), then for the header's own start, which streams and
// delivers a grant made after it.
func TestWatchStartBeyondLogEndIsRefused(t *testing.T) {
	c := startGRPCCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, head, done := httpWatch(ctx, t, c, 1, "resource=r")
	done()
	var shard int
	var next uint64
	for sh, idx := range head.Start {
		shard, next = sh, idx
	}
	far := map[int]uint64{shard: next + 1_000_000}
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	defer rcancel()
	q := url.Values{"resource": {"r"}, "start": {api.FormatWatchStart(far)}}
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+c.members[1].Addr()+api.PathWatch+"?"+q.Encode(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("HTTP watch from %v: %v", far, err)
	}
	var e api.Error
	derr := json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || derr != nil || e.Code != api.CodeInvalidArgument ||
		!strings.Contains(e.Error, "beyond the end of the log") {
		t.Fatalf("HTTP watch from %v: %d %+v %v, want 400 invalid_argument naming the log end", far, resp.StatusCode, e, derr)
	}
	stream, err := c.clients[1].Watch(rctx, &lockstepv1.WatchRequest{Resource: "r", StartIndex: map[int32]uint64{int32(shard): far[shard]}})
	if err == nil {
		_, err = stream.Recv()
	}
	if grpcstatus.Code(err) != codes.InvalidArgument {
		t.Fatalf("gRPC watch from %v: %v, want INVALID_ARGUMENT", far, err)
	}

	lines, _, done := httpWatch(ctx, t, c, 1, "resource=r&"+url.Values{"start": {api.FormatWatchStart(map[int]uint64{shard: next})}}.Encode())
	defer done()
	var out api.AcquireResponse
	if code, e := httpCall(t, http.MethodPost, "http://"+c.members[0].Addr()+api.PathAcquire,
		api.AcquireRequest{Resource: "r", ClientID: "A", TTLMs: 60_000}, &out); code != 200 || !out.Granted {
		t.Fatalf("acquire: %d %+v", code, e)
	}
	var m api.WatchMessage
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &m) != nil || len(m.Events) == 0 || m.Events[0].Kind != "grant" {
		t.Fatalf("watch from the log end: line %q %v, want the grant", lines.Text(), lines.Err())
	}
}
