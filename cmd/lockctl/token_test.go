package main

import (
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/lockd"
)

// Goal: --token (or $LOCKSTEP_TOKEN) reaches the server: on a member with
// ACLs on, a command without a token fails with unauthenticated, one with
// the bootstrap token (by flag, then by environment) succeeds, for plain
// commands and for lock (the Go client). Method: a one-member cluster
// started with an ACL bootstrap token.
func TestTokenFlagAndEnv(t *testing.T) {
	const secret = "lockctl-test-root-token"
	ep := startMemberWith(t, func(o *lockd.Options) { o.ACLBootstrapToken = secret })
	// ACLs are on once the bootstrap is applied: no token is then refused.
	waitUntil(t, func() bool {
		code, _, _ := lockctl(t, "--endpoints", ep, "--token", "", "status", "job")
		return code == exitFailed
	})
	t.Setenv(envToken, "")
	if code, _, errOut := lockctl(t, "--endpoints", ep, "status", "job"); code != exitFailed || !strings.Contains(errOut, "unauthenticated") {
		t.Fatalf("no token: exit %d %q", code, errOut)
	}
	if code, out, errOut := lockctl(t, "--endpoints", ep, "--token", secret, "status", "job"); code != exitOK {
		t.Fatalf("--token: exit %d %q %q", code, out, errOut)
	}
	if code, _, errOut := lockctl(t, "--endpoints", ep, "lock", "--ttl", "5s", "job", "--", "true"); code == exitOK {
		t.Fatalf("lock without a token succeeded: %q", errOut)
	}
	if code, _, errOut := lockctl(t, "--endpoints", ep, "watch", "job", "--start", "1:1", "--count", "1"); code != exitFailed || !strings.Contains(errOut, "unauthenticated") {
		t.Fatalf("watch without a token: exit %d %q", code, errOut)
	}
	t.Setenv(envToken, secret)
	if code, out, errOut := lockctl(t, "--endpoints", ep, "status", "job"); code != exitOK {
		t.Fatalf("$%s: exit %d %q %q", envToken, code, out, errOut)
	}
	if code, _, errOut := lockctl(t, "--endpoints", ep, "lock", "--ttl", "5s", "job", "--", "true"); code != exitOK {
		t.Fatalf("lock with $%s: exit %d %q", envToken, code, errOut)
	}
	// The lock above was granted: a watch from the start sees it.
	if code, out, errOut := lockctl(t, "--endpoints", ep, "watch", "job", "--start", "1:1", "--count", "1"); code != exitOK || !strings.Contains(out, "grant") {
		t.Fatalf("watch with $%s: exit %d %q %q", envToken, code, out, errOut)
	}
}
