package scenarios

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/lockstep/lockstep/core/node"
)

// Regression pins a bug the testbed found: the scenario and seed that
// exposed it and the bug mode that puts it back. The correct server must
// pass that run; the bug mode must be caught by it (or, since a seed does
// not fix every interleaving of a native run, within SeedsMax seeds from it).
type Regression struct {
	Name     string   `json:"name"`
	Scenario string   `json:"scenario"`
	Bug      node.Bug `json:"bug"`
	Seed     int64    `json:"seed"`
	SeedsMax int64    `json:"seeds_max"`
	// Found says where and how the bug was found, and what fixed it.
	Found string `json:"found"`
}

//go:embed regressions/*.json
var regressionDefs embed.FS

// Regressions returns every pinned regression, sorted by name.
func Regressions() ([]Regression, error) {
	entries, err := fs.ReadDir(regressionDefs, "regressions")
	if err != nil {
		return nil, err
	}
	var out []Regression
	for _, e := range entries {
		b, err := regressionDefs.ReadFile(path.Join("regressions", e.Name()))
		if err != nil {
			return nil, err
		}
		var r Regression
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if want := strings.TrimSuffix(e.Name(), ".json"); r.Name != want {
			return nil, fmt.Errorf("%s: name %q must match the file name", e.Name(), r.Name)
		}
		if _, err := ByName(r.Scenario); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if r.Bug == "" || r.Seed == 0 || r.SeedsMax < 1 {
			return nil, fmt.Errorf("%s: bug, seed and seeds_max are required", e.Name())
		}
		out = append(out, r)
	}
	return out, nil
}
