//go:build !race

package sim

// raceEnabled shortens the speed measurement, which -race slows tenfold.
const raceEnabled = false
