package main

import (
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/lockd"
)

// TestWALModeFlag: goal — --wal-mode reaches the member's options from
// both command lines, defaults to per-group, and a bad value is refused
// naming the flag.
func TestWALModeFlag(t *testing.T) {
	member := []string{"--id", "n1", "--raft-addr", "127.0.0.1:7170", "--data-dir", "d", "--peers", "n1=127.0.0.1:7170", "--insecure"}
	for _, tc := range []struct {
		args []string
		want lockd.WALMode
	}{
		{nil, ""},
		{[]string{"--wal-mode", "shared"}, lockd.WALShared},
		{[]string{"--wal-mode", "per-group"}, lockd.WALPerGroup},
	} {
		opts, err := parseMember(append(append([]string{}, member...), tc.args...))
		if err != nil {
			t.Fatal(err)
		}
		if opts.WALMode != tc.want {
			t.Errorf("member %v: WALMode %q, want %q", tc.args, opts.WALMode, tc.want)
		}
		dev, err := parseDev(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		var devOpts lockd.Options
		dev.settings.apply(&devOpts)
		if devOpts.WALMode != tc.want {
			t.Errorf("dev %v: WALMode %q, want %q", tc.args, devOpts.WALMode, tc.want)
		}
	}
	bad := []string{"--wal-mode", "one"}
	if _, err := parseDev(bad); err == nil || !strings.Contains(err.Error(), "--wal-mode") {
		t.Errorf("dev %v: %v, want an error naming --wal-mode", bad, err)
	}
	if _, err := parseMember(append(member, bad...)); err == nil || !strings.Contains(err.Error(), "--wal-mode") {
		t.Errorf("member %v: %v, want an error naming --wal-mode", bad, err)
	}
}
