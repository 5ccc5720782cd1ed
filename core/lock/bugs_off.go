//go:build !lockstep_bugs

package lock

// bugsBuilt says this build compiles the bug modes in: it does not.
const bugsBuilt = false

// forgetOnNewTerm does nothing without bug modes.
func (s *State) forgetOnNewTerm() {}

func (s *State) forgetsSettled() bool { return false }

func (s *State) tokenInMemory() bool { return false }

func (s *State) permitOvercount() bool { return false }
func (s *State) missesDeadlocks() bool { return false }

func (s *State) rememberRegranted(*holder) {}

func (s *State) reviveRegranted(uint64, *Command) (Result, bool) { return Result{}, false }
