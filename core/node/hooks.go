package node

import "github.com/lockstep/lockstep/core/lock"

// Hooks are the testbed's probes into a node and its one lever, a bug
// mode. Production leaves Config.Hooks nil: every probe is then off and
// every bug path compiles to nothing (bugs_off.go).
type Hooks struct {
	// Bug turns on one deliberate mistake (bugs.go); "" is none. Only a
	// build with the lockstep_bugs tag accepts one.
	Bug Bug

	// OnEvent sees every state machine event this node applies (the
	// simulator records them as the trace).
	OnEvent func(lock.Event)
	// OnApply sees each command entry right after it applied: its index
	// and bytes, and the state it left (read-only, valid only during the
	// call). The simulator compares replicas with it.
	OnApply func(index uint64, entry []byte, state *lock.State)
	// OnApplyPanic is told of a panic raised while an entry applied (a
	// broken state machine invariant), with the entry's index and the
	// stack, instead of the panic ending the process; the node then
	// applies nothing more and fails every later entry. The simulator
	// reports it as a finding; without it the process crashes.
	OnApplyPanic func(index uint64, value any, stack []byte)
	// OnWake sees each wake-up of blocked callers by an applied entry: the
	// queued request (lease id) whose grant or cancel woke its caller(s),
	// or, for a freed lock, a zero id and how many racers woke (the
	// thundering-herd check).
	OnWake func(resource string, index uint64, lease lock.LeaseID, woken int)
}

// bothEvents calls a, then b, each if set.
func bothEvents(a, b func(lock.Event)) func(lock.Event) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(ev lock.Event) { a(ev); b(ev) }
}

// hooks returns the configured hooks, or none.
func (c *Config) hooks() Hooks {
	if c.Hooks == nil {
		return Hooks{}
	}
	return *c.Hooks
}
