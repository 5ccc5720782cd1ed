package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Goal: an acquire whose wait would close a wait-for cycle exits 5 and
// prints the cycle, while the request it would deadlock with is still
// queued and granted once the cycle's other lock is released. Method: a
// one-member cluster; A holds x, B holds y, A waits for y in the
// background, B asks for x with a wait.
func TestDeadlockExitCode(t *testing.T) {
	ep := startMember(t)
	acquire := func(client, resource string, args ...string) api.AcquireResponse {
		t.Helper()
		code, out, errOut := lockctl(t, append([]string{"--endpoints", ep, "--client-id", client, "acquire", resource, "--ttl", "30s"}, args...)...)
		var got api.AcquireResponse
		if code != exitOK || json.Unmarshal([]byte(out), &got) != nil || !got.Granted {
			t.Fatalf("%s acquire %s: exit %d %q %q", client, resource, code, out, errOut)
		}
		return got
	}
	acquire("A", "x")
	y := acquire("B", "y")
	waited := make(chan string, 1)
	go func() {
		// Not acquire: t.Fatalf belongs to the test's goroutine.
		_, out, _ := lockctl(t, "--endpoints", ep, "--client-id", "A", "acquire", "y", "--ttl", "30s", "--wait", "20s")
		waited <- out
	}()
	waitUntil(t, func() bool {
		code, out, _ := lockctl(t, "--endpoints", ep, "status", "y")
		return code == exitOK && strings.Contains(out, `"client_id": "A"`)
	})
	code, _, errOut := lockctl(t, "--endpoints", ep, "--client-id", "B", "acquire", "x", "--ttl", "30s", "--wait", "5s")
	if code != exitDeadlock || !strings.Contains(errOut, "B -> A") {
		t.Fatalf("B's wait for x: exit %d %q, want %d naming the cycle B -> A", code, errOut, exitDeadlock)
	}
	if code, out, _ := lockctl(t, "--endpoints", ep, "release", "y", y.LeaseID); code != exitOK {
		t.Fatalf("release y: exit %d %q", code, out)
	}
	select {
	case out := <-waited:
		var got api.AcquireResponse
		if json.Unmarshal([]byte(out), &got) != nil || !got.Granted {
			t.Fatalf("A's wait for y: %q", out)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("A's wait for y did not end after y was released")
	}
}
