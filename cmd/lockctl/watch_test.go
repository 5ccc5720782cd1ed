package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
	code, out, errOut := lockctl(t, "--endpoints", "127.0.0.1:1,"+ep, "watch", "job", "--start", "1:1", "--count", "4")
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
	code, out, _ = lockctl(t, "--endpoints", ep, "watch", "", "--prefix", "--start", "1:1", "--count", "6")
	var all []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var l watchLine
		_ = json.Unmarshal([]byte(line), &l)
		all = append(all, l.Kind+":"+l.Resource)
	}
	if code != exitOK || strings.Join(all, " ") != "grant:job release:job grant:other-A grant:job release:job grant:other-B" {
		t.Fatalf("watch of every resource: exit %d %v", code, all)
	}
	code, out, _ = lockctl(t, "--endpoints", ep, "--output", "table", "watch", "job", "--start", "1:1", "--count", "2")
	if code != exitOK || !strings.Contains(out, "KIND") || strings.Count(out, "\n") != 3 || !strings.Contains(out, api.LeaseFingerprint(leases[0].LeaseID)) {
		t.Fatalf("table watch: exit %d %q", code, out)
	}
}

// Goal: acquire-many takes several resources at once (atomically, on
// one shard), and a refusal names the resource that blocked it, takes
// nothing and exits 3; --output table renders replies; bad command lines
// exit 2. Method: one member, hash-tagged resources.
func TestAcquireManyAndTableOutput(t *testing.T) {
	ep := startMember(t)
	code, out, errOut := lockctl(t, "--endpoints", ep, "--client-id", "A", "--output", "table", "acquire-many", "{x}a", "{x}b", "--ttl", "30s")
	if code != exitOK || !strings.Contains(out, "RESOURCE") || !strings.Contains(out, "{x}a") || !strings.Contains(out, "{x}b") || !strings.Contains(out, "atomic") {
		t.Fatalf("acquire-many: exit %d %q %q", code, out, errOut)
	}
	code, out, _ = lockctl(t, "--endpoints", ep, "--client-id", "B", "acquire-many", "{x}c", "{x}b", "--ttl", "30s")
	var refused api.AcquireManyResponse
	if code != exitNotGranted || json.Unmarshal([]byte(out), &refused) != nil || refused.Blocked != "{x}b" {
		t.Fatalf("acquire-many of a held resource: exit %d %q, want %d blocked by {x}b", code, out, exitNotGranted)
	}
	if hs := holders(t, ep, "{x}c"); len(hs) != 0 {
		t.Fatalf("refused acquire-many left %+v on {x}c", hs)
	}
	code, out, _ = lockctl(t, "--endpoints", ep, "--output", "table", "status", "{x}a")
	if code != exitOK || !strings.Contains(out, "holder") || !strings.Contains(out, " A ") {
		t.Fatalf("status table: exit %d %q", code, out)
	}
	for _, args := range [][]string{{"--output", "yaml", "status", "job"}, {"acquire-many"}, {"watch"}, {"watch", "job", "--start", "x"}} {
		if code, _, errOut := lockctl(t, append([]string{"--endpoints", ep}, args...)...); code != exitUsage || errOut == "" {
			t.Errorf("lockctl %v: exit %d %q, want %d", args, code, errOut, exitUsage)
		}
	}
}

// Goal: every command documents itself with examples, and cobra's shell
// completion works, including the values of --output. Method: walk the
// command tree; run completion bash and a completion request.
func TestHelpAndCompletion(t *testing.T) {
	root := newRoot(strings.NewReader(""), &strings.Builder{}, &strings.Builder{})
	for _, c := range root.Commands() {
		if c.Example == "" && c.Name() != "help" && c.Name() != "completion" {
			t.Errorf("lockctl %s has no examples", c.Name())
		}
	}
	if code, out, errOut := lockctl(t, "completion", "bash"); code != exitOK || !strings.Contains(out, "__start_lockctl") {
		t.Fatalf("completion bash: exit %d %q (%d bytes)", code, errOut, len(out))
	}
	if code, out, _ := lockctl(t, "__complete", "status", "--output", ""); code != exitOK || !strings.Contains(out, "json\ntable\n") {
		t.Fatalf("completion of --output: exit %d %q", code, out)
	}
	if code, out, _ := lockctl(t, "watch", "--help"); code != exitOK || !strings.Contains(out, "Examples:") {
		t.Fatalf("watch --help: exit %d %q", code, out)
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
	code, out, errOut := lockctl(t, "--endpoints", srv.URL, "watch", "p/", "--prefix")
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

// watchLines runs lockctl watch for count events and decodes them.
func watchLines(t *testing.T, ep, resource string, count int) []watchLine {
	t.Helper()
	code, out, errOut := lockctl(t, "--endpoints", ep, "watch", resource, "--start", "1:1", "--count", strconv.Itoa(count))
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

// Goal: `lockctl lock job -- sleep 3` holds job for exactly the command's
// life, as the log records it: one grant before the command starts and
// its release after the command ends, at least 3 s of log time apart,
// nothing else on job in between (the 1 s TTL was renewed, not let
// expire); lockctl exits 0 like sleep. Method: one member; run it, then
// read job's history with watch from the shard's first index.
func TestLockSleepHoldsForItsLife(t *testing.T) {
	ep := startMember(t)
	if code, _, errOut := lockctl(t, "--endpoints", ep, "lock", "job", "--ttl", "1s", "--", "sleep", "3"); code != exitOK {
		t.Fatalf("lockctl lock job -- sleep 3: exit %d %q", code, errOut)
	}
	ev := watchLines(t, ep, "job", 2)
	if ev[0].Kind != "grant" || ev[1].Kind != "release" || ev[0].LeaseFingerprint != ev[1].LeaseFingerprint {
		t.Fatalf("job's events %+v, want one grant then its release", ev)
	}
	if held := ev[1].LogTime - ev[0].LogTime; held < 3000 {
		t.Fatalf("held for %d ms of log time, less than the command's 3 s", held)
	}
	if hs := holders(t, ep, "job"); len(hs) != 0 {
		t.Fatalf("holders after lockctl returned: %+v", hs)
	}
}

// Goal: lock --mode shared lets two holders in at once. Method: the first
// command waits for a file that only the second command creates, so the
// second must be granted while the first holds (with --wait 5s: an
// exclusive lock would refuse it, exit 3); watch then shows two grants
// before any release.
func TestLockSharedModeHoldsTogether(t *testing.T) {
	ep := startMember(t)
	flag := filepath.Join(t.TempDir(), "second-ran")
	t.Cleanup(func() { _ = os.WriteFile(flag, nil, 0o600) })
	first := make(chan int, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		first <- run(context.Background(), []string{"--endpoints", ep, "--client-id", "A", "lock", "--mode", "shared", "sj", "--",
			"sh", "-c", "until [ -e " + flag + " ]; do sleep 0.05; done"}, strings.NewReader(""), &stdout, &stderr)
	}()
	waitUntil(t, func() bool { return len(holders(t, ep, "sj")) == 1 })
	if code, _, errOut := lockctl(t, "--endpoints", ep, "--client-id", "B", "lock", "--mode", "shared", "--wait", "5s", "sj", "--", "touch", flag); code != exitOK {
		t.Fatalf("second shared lock: exit %d %q", code, errOut)
	}
	if code := <-first; code != exitOK {
		t.Fatalf("first shared lock: exit %d", code)
	}
	var kinds []string
	for _, l := range watchLines(t, ep, "sj", 4) {
		kinds = append(kinds, l.Kind+":"+l.ClientID+":"+string(l.Mode))
	}
	if strings.Join(kinds[:2], " ") != "grant:A:shared grant:B:shared" {
		t.Fatalf("events %v, want both shared grants before any release", kinds)
	}
}
