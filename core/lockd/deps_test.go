package lockd_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDependencyBoundaries: goal — the production server links no
// fault-injection machinery, the simulator links no disk store (it must
// build for wasip1 and run deterministically, and bbolt/the WAL have no
// business there), the two front ends do not import each other and the Go
// client links no server code. Method: `go list -deps` each command or
// package and look for the packages that must stay out; skipped where the
// go tool is missing.
func TestDependencyBoundaries(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	cases := []struct {
		cmd       string
		forbidden []string
	}{
		// core/faultctl (test clock, trace) links only with -tags lockstep_faults.
		{"github.com/lockstep/lockstep/cmd/lockd", []string{"github.com/pingcap/failpoint", "github.com/lockstep/lockstep/core/faultctl"}},
		{"github.com/lockstep/lockstep/cmd/locksim", []string{
			"go.etcd.io/bbolt", "github.com/boltdb/bolt", "github.com/hashicorp/raft-boltdb/v2",
			"github.com/lockstep/lockstep/core/wal", "github.com/lockstep/lockstep/core/lockd",
			// Tracing in the simulator is the no-op API only: no SDK, no exporter.
			"github.com/lockstep/lockstep/core/tracing/otlp", "go.opentelemetry.io/otel/sdk/trace",
		}},
		// The front ends are thin over core/service, and neither reaches
		// into the other.
		{"github.com/lockstep/lockstep/core/grpcapi", []string{"github.com/lockstep/lockstep/core/server"}},
		{"github.com/lockstep/lockstep/core/server", []string{"github.com/lockstep/lockstep/core/grpcapi"}},
		// The Go client stays light: the wire types, none of the server.
		{"github.com/lockstep/lockstep/core/client", []string{"github.com/lockstep/lockstep/core/service",
			"github.com/lockstep/lockstep/core/server", "github.com/lockstep/lockstep/core/node", "github.com/hashicorp/raft"}},
	}
	for _, c := range cases {
		out, err := exec.Command(goTool, "list", "-deps", c.cmd).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", c.cmd, err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, c.cmd) {
			t.Fatalf("go list -deps %s does not list the command itself: %q", c.cmd, out)
		}
		for _, f := range c.forbidden {
			if slices.Contains(deps, f) {
				t.Errorf("%s links %s", c.cmd, f)
			}
		}
	}
}
