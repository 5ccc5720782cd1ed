package checker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/anishathalye/porcupine"
	"github.com/lockstep/lockstep/models"
)

// ReportOptions tunes WriteReport.
type ReportOptions struct {
	// Always writes the report even for a Success verdict.
	Always bool
}

// WriteReport writes the evidence of a non-successful (or, with Always, any)
// run under dir: the history JSON files, verdict.json, and history.html,
// Porcupine's visualization with fault windows and timed violations as
// annotations. The HTML needs the linearization Check computed, so it is
// skipped when Check never ran Porcupine (malformed history). It returns
// the paths written; none when there was nothing to report.
func WriteReport(ctx context.Context, dir string, h *History, res Result, opts ReportOptions) ([]string, error) {
	if res.Verdict == Success && !opts.Always {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("write report: %w", err)
	}
	paths, err := h.Save(dir)
	if err != nil {
		return paths, fmt.Errorf("write report: %w", err)
	}
	verdict := filepath.Join(dir, "verdict.json")
	if err := WriteJSON(verdict, "  ", res); err != nil {
		return paths, fmt.Errorf("write report: %w", err)
	}
	paths = append(paths, verdict)
	if res.info == nil {
		slog.InfoContext(ctx, "report without history.html: no linearization to show", "dir", dir, "verdict", res.Verdict)
		return paths, nil
	}
	html := filepath.Join(dir, "history.html")
	info := *res.info
	info.AddAnnotations(annotations(h, res))
	if err := visualize(info, html); err != nil {
		return paths, fmt.Errorf("write report: %w", err)
	}
	return append(paths, html), nil
}

// visualize renders info to path.
func visualize(info porcupine.LinearizationInfo, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("visualize: %w", err)
	}
	if err := porcupine.Visualize(models.Lock, info, f); err != nil {
		f.Close()
		return fmt.Errorf("visualize: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("visualize: %w", err)
	}
	return nil
}

// annotations marks fault windows and violations that carry a virtual time,
// each on its own tagged lane above the client lanes.
func annotations(h *History, res Result) []porcupine.Annotation {
	var out []porcupine.Annotation
	for _, ft := range h.Faults {
		out = append(out, porcupine.Annotation{
			Tag: "faults", Start: ft.Start, End: ft.End, Description: ft.Name,
			Details: fmt.Sprintf("%s on %s from %d to %d", ft.Name, ft.Target, ft.Start, ft.End), BackgroundColor: "#ffe0a0",
		})
	}
	for _, v := range res.Violations {
		if v.At == 0 {
			continue
		}
		out = append(out, porcupine.Annotation{
			Tag: "violations", Start: v.At, Description: v.Check, Details: v.Message,
			TextColor: "#ffffff", BackgroundColor: "#c0392b",
		})
	}
	return out
}
