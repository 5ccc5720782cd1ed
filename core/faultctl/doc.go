// Package faultctl is the test-only fault surface of a lockd process: a
// monotonic clock the test harness can offset, drift and jump, a log disk
// whose syncs it can slow or fail (through the WAL's BeforeSync seam), and
// a trace of every applied entry and state-machine event written to a
// file. Only lockd built with the lockstep_faults tag links it
// (cmd/lockd/faults_on.go); a production build refuses its flags.
// scenarios/realnet drives it.
package faultctl
