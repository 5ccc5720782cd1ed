package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Goal: watch prints a resource's events, one JSON line each with its
// shard and index, in log order, and gets past a dead endpoint by
// resuming on the next. Method: a one-member cluster; two clients take
// and release "job" in turn (another resource taken after each), then
// watch resumes from shard 1's first
// index, a dead endpoint listed first, for four events; a table
// rendering must show them too.
func TestWatchPrintsEvents(t *testing.T) {
	ep := startMember(t)
	var leases []api.AcquireResponse
	for _, client := range []string{"A", "B"} {
		code, out, errOut := lockctl(t, "--endpoints", ep, "--client-id", client, "acquire", "job", "--ttl", "30s")
		var got api.AcquireResponse
		if code != exitOK || json.Unmarshal([]byte(out), &got) != nil {
			t.Fatalf("acquire as %s: exit %d %q %q", client, code, out, errOut)
		}
		leases = append(leases, got)
		if code, _, _ := lockctl(t, "--endpoints", ep, "release", "job", got.LeaseID); code != exitOK {
			t.Fatalf("release: exit %d", code)
		}
		// Another resource's events in between must not show.
		if code, _, _ := lockctl(t, "--endpoints", ep, "--client-id", "C", "acquire", "other-"+client, "--ttl", "30s"); code != exitOK {
			t.Fatalf("acquire other: exit %d", code)
		}
	}
	code, out, errOut := watchFor(t, "--endpoints", "127.0.0.1:1,"+ep, "watch", "job", "--start", "1:1", "--count", "4")
	if code != exitOK || !strings.Contains(errOut, "resuming") {
		t.Fatalf("watch: exit %d, stderr %q (want a resume past the dead endpoint)", code, errOut)
	}
	var kinds []string
	var last uint64
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var l watchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if l.Resource != "job" || l.Shard != 1 || l.Index <= last {
			t.Fatalf("line %q after index %d", sc.Text(), last)
		}
		last = l.Index
		kinds = append(kinds, l.Kind+":"+l.ClientID)
		if l.Kind == "grant" && l.FencingToken != leases[len(kinds)/2].FencingToken {
			t.Fatalf("grant %q, want token %d", sc.Text(), leases[len(kinds)/2].FencingToken)
		}
	}
	if strings.Join(kinds, " ") != "grant:A release:A grant:B release:B" {
		t.Fatalf("events %v", kinds)
	}
	// An empty prefix follows every resource.
	code, out, _ = watchFor(t, "--endpoints", ep, "watch", "", "--prefix", "--start", "1:1", "--count", "6")
	var all []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var l watchLine
		_ = json.Unmarshal([]byte(line), &l)
		all = append(all, l.Kind+":"+l.Resource)
	}
	if code != exitOK || strings.Join(all, " ") != "grant:job release:job grant:other-A grant:job release:job grant:other-B" {
		t.Fatalf("watch of every resource: exit %d %v", code, all)
	}
	code, out, _ = watchFor(t, "--endpoints", ep, "--output", "table", "watch", "job", "--start", "1:1", "--count", "2")
	if code != exitOK || !strings.Contains(out, "KIND") || strings.Count(out, "\n") != 3 || !strings.Contains(out, api.LeaseFingerprint(leases[0].LeaseID)) {
		t.Fatalf("table watch: exit %d %q", code, out)
	}
}

// Goal: a watch whose stream breaks resumes after the last index it
// printed on each shard: nothing lost, nothing twice; a compacted answer
// ends it with exit 1. Method: a fake member whose first stream sends a
// header and two entries on two shards and then breaks; the second
// request must ask start=1:8,2:5 and gets one entry, then the third is
// answered 410 compacted.
func TestWatchResumesAfterBrokenStream(t *testing.T) {
	var starts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		starts = append(starts, r.URL.Query().Get("start"))
		ev := func(shard int, index uint64, token uint64) string {
			b, _ := json.Marshal(api.WatchMessage{Shard: shard, Index: index, Events: []api.WatchEvent{{Kind: "grant", Resource: "p/x", FencingToken: token}}})
			return string(b) + "\n"
		}
		switch len(starts) {
		case 1:
			_, _ = io.WriteString(w, `{"start":{"1":5,"2":3}}`+"\n"+ev(1, 7, 1)+ev(2, 4, 2))
		case 2:
			_, _ = io.WriteString(w, `{"start":{"1":8,"2":5}}`+"\n"+ev(2, 9, 3))
		default:
			w.WriteHeader(http.StatusGone)
			_, _ = io.WriteString(w, `{"error":"gone","code":"compacted"}`)
		}
	}))
	defer srv.Close()
	code, out, errOut := watchFor(t, "--endpoints", srv.URL, "watch", "p/", "--prefix")
	if code != exitFailed || !strings.Contains(errOut, "compacted") {
		t.Fatalf("exit %d %q, want %d compacted", code, errOut, exitFailed)
	}
	if strings.Join(starts, " ") != " 1:8,2:5 1:8,2:10" {
		t.Fatalf("start parameters %q", starts)
	}
	if n := strings.Count(out, `"kind":"grant"`); n != 3 {
		t.Fatalf("printed %d grants, want 3: %q", n, out)
	}
}

// watchFor runs lockctl (a watch) for at most 30 s: a watch that never
// gets its events ends with what it printed, and the test fails on that
// rather than hanging.
func watchFor(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// watchLines runs lockctl watch for count events and decodes them.
func watchLines(t *testing.T, ep, resource string, count int) []watchLine {
	t.Helper()
	code, out, errOut := watchFor(t, "--endpoints", ep, "watch", resource, "--start", "1:1", "--count", strconv.Itoa(count))
	if code != exitOK {
		t.Fatalf("watch %s: exit %d %q", resource, code, errOut)
	}
	var lines []watchLine
	for _, s := range strings.Split(strings.TrimSpace(out), "\n") {
		var l watchLine
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("line %q: %v", s, err)
		}
		lines = append(lines, l)
	}
	return lines
}
