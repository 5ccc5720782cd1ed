package main

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/node"
)

// Goal: --token (or $LOCKSTEP_TOKEN) reaches the server: on a member with
// ACLs on, a command without a token fails with unauthenticated, one with
// the bootstrap token (by flag, then by environment) succeeds, for plain
// commands and for lock (the Go client). Method: a one-member cluster
// started with an ACL bootstrap token.
func TestTokenFlagAndEnv(t *testing.T) {
	const secret = "lockctl-test-root-token"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raftAddr := ln.Addr().String()
	_ = ln.Close()
	m, err := lockd.Start(lockd.Options{ID: "n1", RaftAddr: raftAddr, HTTPAddr: "127.0.0.1:0",
		DataDir: filepath.Join(t.TempDir(), "n1"), Peers: []node.Peer{{ID: "n1", RaftAddr: raftAddr}}, Bootstrap: true, Shards: 1,
		Lock: lock.DefaultConfig(), Logger: slog.New(slog.DiscardHandler), SpreadInterval: -1, ACLBootstrapToken: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = m.Stop(ctx)
	})
	waitUntil(t, func() bool { return m.Shard(1) != nil && m.Shard(1).IsLeader() && m.Host.Meta().ACL() != nil })
	ep := "http://" + m.Addr()
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
	t.Setenv(envToken, secret)
	if code, out, errOut := lockctl(t, "--endpoints", ep, "status", "job"); code != exitOK {
		t.Fatalf("$%s: exit %d %q %q", envToken, code, out, errOut)
	}
	if code, _, errOut := lockctl(t, "--endpoints", ep, "lock", "--ttl", "5s", "job", "--", "true"); code != exitOK {
		t.Fatalf("lock with $%s: exit %d %q", envToken, code, errOut)
	}
}
