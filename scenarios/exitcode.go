package scenarios

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockstep/lockstep/checker"
)

// The exit codes of the commands that run scenarios (cmd/locksim,
// cmd/realnet), so that scripts and cmd/mutate tell failures apart.
const (
	ExitOK          = 0   // every run as expected
	ExitCrash       = 127 // the harness crashed
	ExitLiveness    = 128 // only liveness checks failed
	ExitCorrectness = 129 // a correctness check failed
	ExitUnknown     = 130 // a check could not finish (never counted as a pass)
)

// ExitCode turns a result that was not as expected into an exit code.
func ExitCode(r checker.Result) int {
	if r.Verdict == checker.Unknown {
		return ExitUnknown
	}
	for _, v := range r.Violations {
		if v.Check != checker.CheckLiveness {
			return ExitCorrectness
		}
	}
	return ExitLiveness
}

// ParseSeedRange parses a -seeds value, a..b with a <= b.
func ParseSeedRange(s string) (lo, hi int64, err error) {
	a, b, ok := strings.Cut(s, "..")
	lo, err1 := strconv.ParseInt(a, 10, 64)
	hi, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || hi < lo {
		return 0, 0, fmt.Errorf("-seeds %q: want a..b", s)
	}
	return lo, hi, nil
}
