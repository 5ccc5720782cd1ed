package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/maelstrom/runner"
)

// TestParseConcurrency checks Maelstrom's --concurrency forms: a number,
// or "Kn" meaning K clients per node.
func TestParseConcurrency(t *testing.T) {
	cases := map[string]int{"4": 4, "2n": 6, "1n": 3}
	for in, want := range cases {
		if got, err := parseConcurrency(in, 3); err != nil || got != want {
			t.Errorf("parseConcurrency(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "xn", "-1", "0n"} {
		if _, err := parseConcurrency(bad, 3); err == nil {
			t.Errorf("parseConcurrency(%q) accepted", bad)
		}
	}
}

// TestExitStatus checks that each outcome has its own exit status and that
// a failure prints the replay command with the seed first.
func TestExitStatus(t *testing.T) {
	cmd := "go run ./cmd/maelstrom-run --seed 9 -w lin-kv"
	cases := []struct {
		v    *runner.Verdict
		err  error
		want int
	}{
		{&runner.Verdict{Result: runner.Valid}, nil, exitValid},
		{&runner.Verdict{Result: runner.Invalid}, nil, exitInvalid},
		{&runner.Verdict{Result: runner.Unknown}, nil, exitUnknown},
		{nil, fmt.Errorf("%w: node n1 exited", runner.ErrHarness), exitHarness},
		{nil, errors.New("disk full"), exitHarness},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		if got := conclude(c.v, c.err, "dir", cmd, &out, &errOut); got != c.want {
			t.Errorf("%+v %v: exit %d, want %d", c.v, c.err, got, c.want)
		}
		if c.want == exitInvalid && !strings.Contains(out.String(), "replay: "+cmd) {
			t.Errorf("invalid run printed no replay command: %q", out.String())
		}
	}
	if code := run([]string{"--no-such-flag"}, &bytes.Buffer{}, &bytes.Buffer{}); code != exitUsage {
		t.Errorf("bad flag: exit %d, want %d", code, exitUsage)
	}
}
