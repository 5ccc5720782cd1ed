package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockstep/lockstep/checker"
)

// Report checks h and writes the run's evidence to dir: history.json,
// verdict.json, history.html (Porcupine's visualization, partitions
// annotated) and, when command is set, COMMAND.txt.
func Report(ctx context.Context, h *History, dir, command string, timeout time.Duration) (*Verdict, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var errs []error
	if err := checker.WriteJSON(filepath.Join(dir, "history.json"), jsonIndent, h); err != nil {
		errs = append(errs, err)
	}
	v, vis, err := Check(ctx, h, timeout)
	if err != nil {
		return v, fmt.Errorf("check: %w", errors.Join(append(errs, err)...))
	}
	if err := checker.WriteJSON(filepath.Join(dir, "verdict.json"), jsonIndent, v); err != nil {
		errs = append(errs, err)
	}
	if vis != nil {
		vis.info.AddAnnotations(annotations(h))
		if err := porcupine.VisualizePath(vis.model, vis.info, filepath.Join(dir, "history.html")); err != nil {
			errs = append(errs, fmt.Errorf("history.html: %w", err))
		}
	}
	if command != "" {
		if err := os.WriteFile(filepath.Join(dir, "COMMAND.txt"), []byte(command+"\n"), 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	return v, errors.Join(errs...)
}

// jsonIndent is one space: histories run to thousands of operations.
const jsonIndent = " "
