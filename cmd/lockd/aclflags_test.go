package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestACLTokenFromEnvStaysOutOfHelp: goal — $LOCKSTEP_ACL_BOOTSTRAP_TOKEN
// reaches the member as its bootstrap token (the flag wins over it) but is
// never printed: it was the flag's default, which lockd -h shows. Method:
// set the variable, read -h, parse a member with and without the flag.
func TestACLTokenFromEnvStaysOutOfHelp(t *testing.T) {
	const secret = "env-secret-0123456789"
	t.Setenv(aclEnv, secret)
	var stdout bytes.Buffer
	if run([]string{"-h"}, &stdout, io.Discard); strings.Contains(stdout.String(), secret) {
		t.Fatalf("lockd -h prints the bootstrap secret from $%s", aclEnv)
	}
	base := []string{"--id", "n1", "--raft-addr", "127.0.0.1:7170", "--data-dir", t.TempDir(),
		"--peers", "n1=127.0.0.1:7170", "--insecure"}
	opts, err := parseMember(base)
	if err != nil || opts.ACLBootstrapToken != secret {
		t.Fatalf("member from $%s: token %q, %v; want %q", aclEnv, opts.ACLBootstrapToken, err, secret)
	}
	opts, err = parseMember(append(base, "--acl-bootstrap-token", "flag-secret-0123456789"))
	if err != nil || opts.ACLBootstrapToken != "flag-secret-0123456789" {
		t.Fatalf("member with the flag: token %q, %v; want the flag's", opts.ACLBootstrapToken, err)
	}
}
