package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Goal: `lockctl lock job -- sleep 3` holds job for exactly the command's
// life, as the log records it: one grant before the command starts and
// its release after the command ends, at least 3 s of log time apart,
// nothing else on job in between (the 2 s TTL was renewed, not let
// expire: 1 s would leave a race-enabled run on a busy box too little room
// for its renew); lockctl exits 0 like sleep. Method: one member; run it, then
// read job's history with watch from the shard's first index.
func TestLockSleepHoldsForItsLife(t *testing.T) {
	ep := startMember(t)
	if code, _, errOut := lockctl(t, "--endpoints", ep, "lock", "job", "--ttl", "2s", "--", "sleep", "3"); code != exitOK {
		t.Fatalf("lockctl lock job -- sleep 3: exit %d %q", code, errOut)
	}
	ev := watchLines(t, ep, "job", 2)
	if ev[0].Kind != "grant" || ev[1].Kind != "release" || ev[0].LeaseFingerprint != ev[1].LeaseFingerprint {
		t.Fatalf("job's events %+v, want one grant then its release", ev)
	}
	if held := ev[1].LogTimeMs - ev[0].LogTimeMs; held < 3000 {
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

// releaseBehindBack releases a lease lockctl holds, so its next renew
// finds the lease lost.
func releaseBehindBack(t *testing.T, ep, resource, leaseID string) {
	t.Helper()
	body, _ := json.Marshal(api.ReleaseRequest{Resource: resource, LeaseID: leaseID})
	resp, err := http.Post(ep+api.PathRelease, "application/json", bytes.NewReader(body))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("release behind lockctl's back: %v %v", resp, err)
	}
	_ = resp.Body.Close()
}

// Goal: a command that ignores SIGTERM is killed --kill-after later when
// the lease is lost, and lockctl exits 4. Method: the command traps TERM
// (recording when it came), records its pid and lease id and loops; the
// test releases the lease behind lockctl's back, waits for lockctl, and
// checks that it returned at least the grace period after the SIGTERM and
// that the command's process is gone.
func TestLockLostKillsAfterGrace(t *testing.T) {
	ep := startMember(t)
	dir := t.TempDir()
	info, termed := filepath.Join(dir, "info"), filepath.Join(dir, "termed")
	done := make(chan int, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		done <- run(context.Background(), []string{"--endpoints", ep, "lock", "job", "--ttl", "1s", "--kill-after", "1s", "--",
			"sh", "-c", `trap 'echo TERM > ` + termed + `' TERM; echo "$$ $LOCKSTEP_LEASE_ID" > ` + info + `; while true; do sleep 0.1; done`},
			strings.NewReader(""), &stdout, &stderr)
	}()
	var fields []string
	waitUntil(t, func() bool {
		b, err := os.ReadFile(info)
		fields = strings.Fields(string(b))
		return err == nil && len(fields) == 2
	})
	released := time.Now()
	releaseBehindBack(t, ep, "job", fields[1])
	select {
	case code := <-done:
		if code != exitLeaseLost {
			t.Fatalf("exit %d, want %d", code, exitLeaseLost)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("lockctl lock did not end a command that ignores SIGTERM")
	}
	// The lease ended when it was released, before lockctl could notice and
	// send SIGTERM: returning sooner than the grace after the release means
	// it did not wait. (The trap's own timing is no reference: on a loaded
	// machine the shell runs it late.)
	if took := time.Since(released); took < time.Second {
		t.Fatalf("lockctl returned %v after the lease ended, before the 1s grace", took)
	}
	if b, err := os.ReadFile(termed); err != nil || strings.TrimSpace(string(b)) != "TERM" {
		t.Fatalf("the command never got SIGTERM: %v %q", err, b)
	}
	pid := 0
	if _, err := fmt.Sscan(fields[0], &pid); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("command (pid %d) still runs after lockctl returned", pid)
	}
}
