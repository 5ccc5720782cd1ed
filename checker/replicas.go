package checker

import "fmt"

// checkReplicas reports every replica that left a log index differently
// from the first replica that applied it (History.Replicas).
func checkReplicas(h *History, f *findings) {
	for _, m := range h.Replicas.Mismatches {
		v := Violation{Index: m.Index}
		if m.EntryDiffers {
			v.Check = CheckLostState
			v.Message = fmt.Sprintf("group %d index %d: %s applied another entry than was applied there first, by %s (a committed entry was replaced)",
				m.Group+1, m.Index, m.Node, m.First)
		} else {
			v.Check = CheckDivergence
			v.Message = fmt.Sprintf("group %d index %d: the same entry left a different state on %s than it first left, on %s",
				m.Group+1, m.Index, m.Node, m.First)
		}
		f.add(v)
	}
}
