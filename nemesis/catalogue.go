package nemesis

import "errors"

// ErrNotApplicable says a nemesis cannot act on the cluster as it is now:
// too few nodes, no known leader, or no workload clients.
var ErrNotApplicable = errors.New("nemesis not applicable")

// ErrUnknownNemesis says a schedule names no nemesis of the catalogue.
var ErrUnknownNemesis = errors.New("unknown nemesis")

// aliases maps former or alternative names to catalogue names so that saved
// schedules keep working.
var aliases = map[string]string{
	"partitionLeader": "isolateLeader",
}

// All returns every nemesis in a fixed order (the order RandomSchedule sees
// when given Names()).
func All() []Nemesis {
	return []Nemesis{
		// partition.go
		partitionRandomHalves(),
		isolateLeader(),
		isolateSingle(),
		partitionMajorityMinority(),
		partitionBridge(),
		partitionRing(),
		// crash.go
		killLeader(),
		killFollower(),
		killRandom(),
		wipeNode(),
		wipeMajority(),
		// pause.go
		pauseLeader(),
		pauseRandom(),
		// clock.go
		skewClockLeader(),
		skewClockRandom(),
		driftClockLeader(),
		driftClockRandom(),
		jumpClockLeader(),
		jumpClockRandom(),
		// thrash.go
		thrashLeader{},
		// disk.go
		slowDiskLeader(),
		failDiskFollower(),
		// client.go
		pauseClient{},
	}
}

// Names lists the names of All in order.
func Names() []string {
	all := All()
	names := make([]string, len(all))
	for i, n := range all {
		names[i] = n.Name()
	}
	return names
}

// ByName finds a nemesis of the catalogue by name or alias.
func ByName(name string) (Nemesis, bool) {
	if canonical, ok := aliases[name]; ok {
		name = canonical
	}
	for _, n := range All() {
		if n.Name() == name {
			return n, true
		}
	}
	return nil, false
}
