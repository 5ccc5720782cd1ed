package checker

import (
	"fmt"
	"strings"
)

// CheckPanic names the check that a server process never panicked: a panic
// is a broken invariant inside the server, whatever the clients saw.
const CheckPanic = "panic"

// Panic is one panic raised inside a server under test and recovered by
// the harness (in the state machine's apply, or in an HTTP handler).
type Panic struct {
	Node string `json:"node"`
	// Where is "apply" (Index is the entry) or "http".
	Where string `json:"where"`
	Group int    `json:"group,omitempty"`
	Index uint64 `json:"index,omitempty"`
	At    int64  `json:"at"`
	Value string `json:"value"`
	Stack string `json:"stack"`
}

// checkPanics reports every recorded panic with the frame that raised it.
func checkPanics(h *History, f *findings) {
	for _, p := range h.Panics {
		where := fmt.Sprintf("in an HTTP handler on %s", p.Node)
		if p.Where == "apply" {
			where = fmt.Sprintf("on %s applying group %d index %d", p.Node, p.Group+1, p.Index)
		}
		f.add(Violation{Check: CheckPanic, Index: p.Index, At: p.At,
			Message: fmt.Sprintf("the server panicked %s: %s (at %s)", where, p.Value, panicSite(p.Stack))})
	}
}

// panicSite is the first frame of stack below the panic machinery, as
// "file:line", or "" when there is none.
func panicSite(stack string) string {
	lines := strings.Split(stack, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic(") && i+3 < len(lines) {
			site := strings.TrimSpace(lines[i+3])
			if j := strings.LastIndex(site, " +0x"); j > 0 {
				site = site[:j]
			}
			return site
		}
	}
	return ""
}
