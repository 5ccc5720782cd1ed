package checker

// attemptsLeft maps each queued request (its lease id) to the earliest log
// time at which one attempt at it gave up (a cancel naming that attempt).
// The request may stay queued for its other attempts, with the deadline of
// the latest of those left, which the trace does not show: from then on
// its deadline is uncertain.
func attemptsLeft(h *History) leftAttempts {
	logTime := make(map[[2]uint64]int64, len(h.Entries))
	for _, e := range h.Entries {
		logTime[[2]uint64{uint64(e.Group), e.Index}] = e.LogTime
	}
	out := make(leftAttempts)
	for _, c := range h.Commands {
		if c.Op != CommandCancel || c.Owner == "" {
			continue
		}
		t := logTime[[2]uint64{uint64(c.Group), c.Index}] // unknown: 0, uncertain from the start
		if old, seen := out[c.LeaseID]; !seen || t < old {
			out[c.LeaseID] = t
		}
	}
	return out
}

// leftAttempts is attemptsLeft's answer.
type leftAttempts map[string]int64

// uncertain says whether lease's deadline may have moved by log time at.
func (l leftAttempts) uncertain(lease string, at int64) bool {
	t, ok := l[lease]
	return ok && t <= at
}
