package scenarios

import "github.com/lockstep/lockstep/core/lock"

// replicaDigest is what two replicas that applied the same index must agree
// on: the state's digest (what a snapshot carries) and the counts a replica
// reports for monitoring. The counts are kept incrementally on a replica
// that replayed the log and recounted by one that restored a snapshot, so
// a leak in the incremental bookkeeping (a client-table reference kept
// after its last lease or waiter left) shows as a divergence once some
// replica restores.
func replicaDigest(st *lock.State) uint64 {
	m := st.Metrics()
	sum := st.Digest()
	for _, v := range []uint64{uint64(m.Resources), uint64(m.Leases), uint64(m.Waiters), uint64(m.Clients)} {
		sum = (sum ^ v) * 1099511628211
	}
	return sum
}
