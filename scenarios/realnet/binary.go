package realnet

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// BuildTags are the tags of the lockd a run starts: the fault surface
// (clock control and trace), plus lockstep_bugs for bug-mode runs.
func BuildTags(bugs bool) []string {
	if bugs {
		return []string{"lockstep_faults", "lockstep_bugs"}
	}
	return []string{"lockstep_faults"}
}

// BuildLockd builds cmd/lockd once into dir with tags and returns the
// binary's path. It runs the go tool from the module root, found with
// `go env GOMOD` from the working directory.
func BuildLockd(ctx context.Context, dir string, tags []string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == "/dev/null" {
		return "", fmt.Errorf("build lockd: not inside the lockstep module")
	}
	bin := filepath.Join(dir, "lockd")
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", strings.Join(tags, ","), "-o", bin, "./cmd/lockd")
	cmd.Dir = filepath.Dir(gomod)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build lockd: %w\n%s", err, b)
	}
	return bin, nil
}
