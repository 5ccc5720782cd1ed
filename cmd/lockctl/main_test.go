package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/loopback"
	"github.com/lockstep/lockstep/core/node"
)

// startMember runs a one-member cluster on loopback and returns its HTTP
// endpoint once it leads.
func startMember(t *testing.T) string { return startMemberWith(t, nil) }

// startMemberWith is startMember with options tune adjusts.
func startMemberWith(t *testing.T, tune func(*lockd.Options)) string {
	t.Helper()
	return startMemberTLS(t, nil, tune).URL()
}

// startMemberTLS is startMemberWith serving tls (nil: plaintext).
func startMemberTLS(t *testing.T, tls *lockd.TLS, tune func(*lockd.Options)) *lockd.Member {
	t.Helper()
	raftAddr, err := loopback.Addr()
	if err != nil {
		t.Fatal(err)
	}
	peers := []node.Peer{{ID: "n1", RaftAddr: raftAddr}}
	opts := lockd.Options{ID: "n1", RaftAddr: raftAddr, HTTPAddr: "127.0.0.1:0",
		DataDir: filepath.Join(t.TempDir(), "n1"), Peers: peers, Bootstrap: true, Shards: 1,
		Lock: lock.DefaultConfig(), Logger: slog.New(slog.DiscardHandler), SpreadInterval: -1, TLS: tls}
	if tune != nil {
		tune(&opts)
	}
	m, err := lockd.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = m.Stop(ctx)
	})
	waitUntil(t, func() bool { return m.Shard(1) != nil && m.Shard(1).IsLeader() })
	return m
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 15s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockctl runs the command in-process and returns exit code and streams.
func lockctl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func holders(t *testing.T, endpoint, resource string) []api.Holder {
	t.Helper()
	resp, err := http.Get(endpoint + api.PathStatus + "?resource=" + resource)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st api.StatusResponse
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Holders
}

// Goal: every command answers with the documented exit code: 0 done, 1 a
// request the server (or the network) refused, 2 a wrong command line, 3
// a lock not granted. Method: a one-member cluster; acquire, refuse,
// renew, read, release twice, and bad command lines, checking code and
// output of each.
func TestExitCodes(t *testing.T) {
	ep := startMember(t)
	code, out, errOut := lockctl(t, "--endpoints", ep, "--client-id", "A", "acquire", "job", "--ttl", "30s")
	var got api.AcquireResponse
	if code != exitOK || json.Unmarshal([]byte(out), &got) != nil || !got.Granted {
		t.Fatalf("acquire: exit %d, %q %q", code, out, errOut)
	}
	if code, out, _ := lockctl(t, "--endpoints", ep, "--client-id", "B", "acquire", "job", "--ttl", "1s"); code != exitNotGranted || !strings.Contains(out, `"granted": false`) {
		t.Errorf("acquire of a held lock: exit %d %q, want %d", code, out, exitNotGranted)
	}
	if code, out, _ := lockctl(t, "--endpoints", ep, "renew", "job", got.LeaseID, "--ttl", "20s"); code != exitOK || !strings.Contains(out, "expires_in") {
		t.Errorf("renew: exit %d %q", code, out)
	}
	if code, out, _ := lockctl(t, "--endpoints", ep, "status", "job"); code != exitOK || !strings.Contains(out, api.LeaseFingerprint(got.LeaseID)) {
		t.Errorf("status: exit %d %q", code, out)
	}
	if code, out, _ := lockctl(t, "--endpoints", ep, "cluster"); code != exitOK || !strings.Contains(out, `"shards"`) {
		t.Errorf("cluster: exit %d %q", code, out)
	}
	if code, _, _ := lockctl(t, "--endpoints", ep, "release", "job", got.LeaseID); code != exitOK {
		t.Errorf("release: exit %d", code)
	}
	if code, _, errOut := lockctl(t, "--endpoints", ep, "release", "job", got.LeaseID); code != exitFailed || !strings.Contains(errOut, "not_holder") {
		t.Errorf("second release: exit %d %q, want %d not_holder", code, errOut, exitFailed)
	}
	if code, _, _ := lockctl(t, "--endpoints", "127.0.0.1:1", "status", "job"); code != exitFailed {
		t.Errorf("unreachable endpoint: exit %d, want %d", code, exitFailed)
	}
	for _, args := range [][]string{{"acquire"}, {"acquire", "job", "--ttl", "0s"}, {"--nope"},
		{"release", "job"}, {"lock"}, {"lock", "job", "--mode", "weird"}, {"nosuch"}} {
		if code, _, errOut := lockctl(t, append([]string{"--endpoints", ep}, args...)...); code != exitUsage || errOut == "" {
			t.Errorf("lockctl %v: exit %d %q, want %d with a message", args, code, errOut, exitUsage)
		}
	}
}

// Goal: lock holds the lock exactly for the command's life: granted before
// it starts (its fencing token in the environment), kept past its TTL by
// renewals, refused to others meanwhile, released as soon as it exits, and
// lockctl exits with the command's code. Method: a 2 s TTL (1 s left a
// race-enabled run on a busy box too little room for a renew) and a command
// that records its environment, sleeps 5 s and exits 7; the test reads
// the holder through HTTP 1.5 TTLs in, tries a competing acquire, and
// checks the lock is free right after lockctl returns (an expiry would
// take up to a TTL).
func TestLockHoldsForCommandLife(t *testing.T) {
	ep := startMember(t)
	env := filepath.Join(t.TempDir(), "env")
	done := make(chan int, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		done <- run(context.Background(), []string{"--endpoints", ep, "lock", "job", "--ttl", "2s", "--",
			"sh", "-c", `echo "$LOCKSTEP_FENCING_TOKEN $LOCKSTEP_LEASE_ID $LOCKSTEP_RESOURCE" > ` + env + `; sleep 5; exit 7`},
			strings.NewReader(""), &stdout, &stderr)
	}()
	var fields []string
	waitUntil(t, func() bool {
		b, err := os.ReadFile(env)
		fields = strings.Fields(string(b))
		return err == nil && len(fields) == 3
	})
	if fields[2] != "job" {
		t.Fatalf("LOCKSTEP_RESOURCE = %q", fields[2])
	}
	time.Sleep(3 * time.Second) // 1.5 TTLs: held only if renewed
	hs := holders(t, ep, "job")
	if len(hs) != 1 || hs[0].LeaseFingerprint != api.LeaseFingerprint(fields[1]) ||
		fields[0] != strconv.FormatUint(hs[0].FencingToken, 10) {
		t.Fatalf("holders 1.5 TTLs in: %+v, command saw token %s lease %s", hs, fields[0], fields[1])
	}
	if code, _, _ := lockctl(t, "--endpoints", ep, "acquire", "job", "--ttl", "1s"); code != exitNotGranted {
		t.Fatalf("competing acquire: exit %d, want %d", code, exitNotGranted)
	}
	select {
	case code := <-done:
		if code != 7 {
			t.Fatalf("lockctl lock exit %d, want the command's 7", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("lockctl lock did not return")
	}
	if hs := holders(t, ep, "job"); len(hs) != 0 {
		t.Fatalf("holders right after the command: %+v, want released", hs)
	}
}

// Goal: a lost lease stops the command: lockctl sends it SIGTERM and exits
// 4. Method: the command records its lease id and sleeps; the test
// releases that lease behind lockctl's back, so the next keep-alive renew
// gets not_holder.
func TestLockLostStopsCommand(t *testing.T) {
	ep := startMember(t)
	env := filepath.Join(t.TempDir(), "env")
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		var stdout bytes.Buffer
		done <- run(context.Background(), []string{"--endpoints", ep, "lock", "job", "--ttl", "1s", "--kill-after", "2s", "--",
			"sh", "-c", `echo "$LOCKSTEP_LEASE_ID" > ` + env + `; exec sleep 30`}, strings.NewReader(""), &stdout, &stderr)
	}()
	var id string
	waitUntil(t, func() bool {
		b, err := os.ReadFile(env)
		id = strings.TrimSpace(string(b))
		return err == nil && id != ""
	})
	releaseBehindBack(t, ep, "job", id)
	select {
	case code := <-done:
		if code != exitLeaseLost {
			t.Fatalf("exit %d, want %d; stderr %q", code, exitLeaseLost, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("lockctl lock did not stop the command after losing the lease")
	}
}
