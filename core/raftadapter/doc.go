// Package raftadapter is how lockstep drives hashicorp/raft v1.7.2: the
// corrections its groups' transports make to raft's RPCs (GroupTransport),
// the log store wrapper that keeps the compaction edge, the stores a group
// runs on (volatile ones here, durable ones in core/lockd) and what a
// process found in its stores when it started. Each workaround says which
// behaviour of v1.7.2 it answers and which failure showed it. It imports
// only raft and the standard library, so the lock group (core/node) and
// the metadata group (core/meta) share it without sharing lock types.
package raftadapter
