// Package codec owns the binary formats lockstep's members exchange and
// store: a command (what one request asks of a lock group's state machine),
// a result (what applying it answered, carried back to a forwarding
// member), and a log entry (what one Raft entry holds: a batch of commands
// under the leader's stamp, or, in logs written before batching, one
// command).
//
// Each format starts with a version byte, and every version ever written
// still decodes: a log outlives the binary that wrote it, and members of two
// versions forward to each other during a rolling upgrade. A new field
// takes a new version; the writer keeps writing the oldest version that can
// express the value, so older members read what newer ones write whenever
// they could understand it.
//
// The formats are written by hand (no reflection): every request encodes a
// command once, on the member that received it, and those bytes are what
// the leader puts in the log and what every replica's state machine reads.
// Damaged input is refused with an error wrapping lock.ErrCorrupt, never a
// panic, and lengths are checked against the input before anything is
// allocated.
package codec
