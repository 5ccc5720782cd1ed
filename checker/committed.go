package checker

import (
	"cmp"
	"slices"
)

// committedEntry is one command of one group's log as the checks that
// replay callers read it: the command (nil when not recorded) and its
// events in the state machine's order. An entry of the log may carry many
// commands; each is one committedEntry, told apart by slot.
type committedEntry struct {
	group  int
	index  uint64
	slot   int
	cmd    *Command
	events []TraceEvent
}

// committedEntries joins h's commands with the trace, in log order per
// group (groups one after another).
func committedEntries(h *History, trace []TraceEvent) []committedEntry {
	type key struct {
		group int
		index uint64
		slot  int
	}
	byKey := make(map[key]*committedEntry)
	var keys []key
	at := func(k key) *committedEntry {
		e, ok := byKey[k]
		if !ok {
			e = &committedEntry{group: k.group, index: k.index, slot: k.slot}
			byKey[k] = e
			keys = append(keys, k)
		}
		return e
	}
	for _, ev := range trace {
		e := at(key{ev.Group, ev.Index, ev.Slot})
		e.events = append(e.events, ev)
	}
	for i := range h.Commands {
		c := &h.Commands[i]
		at(key{c.Group, c.Index, c.Slot}).cmd = c
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.index, b.index), cmp.Compare(a.slot, b.slot))
	})
	out := make([]committedEntry, len(keys))
	for i, k := range keys {
		out[i] = *byKey[k]
	}
	return out
}
