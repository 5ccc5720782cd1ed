package main

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/node"
)

// TestCommitPathFlags: goal — the Raft commit-path knobs reach a member's
// node config and options from both command lines, and out-of-range values
// are refused with a message naming the flag. Method: parse member and dev
// command lines and read the results.
func TestCommitPathFlags(t *testing.T) {
	knobs := []string{"--max-append-entries", "64", "--commit-timeout", "20ms", "--no-batch-apply",
		"--raft-log-cache", "256", "--propose-depth", "3"}
	check := func(what string, tune func(*node.Config), opts lockd.Options) {
		t.Helper()
		var c node.Config
		tune(&c)
		if c.MaxAppendEntries != 64 || c.CommitTimeout != 20*time.Millisecond || !c.NoBatchApply || c.ProposeDepth != 3 {
			t.Errorf("%s: node config %+v", what, c)
		}
		if opts.LogCache != 256 {
			t.Errorf("%s: options log cache %d", what, opts.LogCache)
		}
	}
	member := []string{"--id", "n1", "--raft-addr", "127.0.0.1:7170", "--data-dir", "d", "--peers", "n1=127.0.0.1:7170", "--insecure"}
	opts, err := parseMember(append(member, knobs...))
	if err != nil {
		t.Fatal(err)
	}
	check("member", opts.Tune, opts)
	dev, err := parseDev(knobs)
	if err != nil {
		t.Fatal(err)
	}
	var devOpts lockd.Options
	dev.settings.apply(&devOpts)
	check("dev", devOpts.Tune, devOpts)

	for _, bad := range [][]string{
		{"--max-append-entries", "2000"}, {"--commit-timeout", "100us"}, {"--raft-log-cache", "-1"}, {"--propose-depth", "-1"},
	} {
		if _, err := parseDev(bad); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("dev %v: %v, want an error naming %s", bad, err, bad[0])
		}
		if _, err := parseMember(append(member, bad...)); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("member %v: %v, want an error naming %s", bad, err, bad[0])
		}
	}
}
