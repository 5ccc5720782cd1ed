package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/lockstep/lockstep/checker"
)

// Recheck judges a saved run again from its directory alone: the history,
// and the checker options and verdict in params.json. Replica mismatches
// (lost state, divergence) are part of the history, so they count too.
// It returns the fresh result and the verdict the run was saved with.
func Recheck(ctx context.Context, dir string) (checker.Result, *Outcome, error) {
	h, err := checker.Load(dir)
	if err != nil {
		return checker.Result{}, nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "params.json"))
	if err != nil {
		return checker.Result{}, nil, fmt.Errorf("recheck: %w", err)
	}
	var saved Outcome
	if err := json.Unmarshal(b, &saved); err != nil {
		return checker.Result{}, nil, fmt.Errorf("recheck: params.json: %w", err)
	}
	opts := saved.Checks
	if reflect.ValueOf(opts).IsZero() {
		// Saved before the options were: take the catalogue's.
		s, err := ByName(saved.Scenario)
		if err != nil {
			return checker.Result{}, nil, fmt.Errorf("recheck: %w", err)
		}
		opts = s.options()
	}
	return checker.Check(ctx, h, opts), &saved, nil
}
