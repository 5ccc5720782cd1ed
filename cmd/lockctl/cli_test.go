package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

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
