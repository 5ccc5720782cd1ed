package scenarios

import "net/http"

// Target is the cluster a workload drives: the simulated one (Cluster) or
// real lockd processes (scenarios/realnet). The workload needs only where
// each group's API is and how a client reaches it.
type Target interface {
	// GroupCount is the number of Raft groups.
	GroupCount() int
	// GroupOf places a resource on a group.
	GroupOf(resource string) int
	// Members lists group g's member ids in a fixed order.
	Members(g int) []string
	// URL is a member's API base URL, e.g. http://127.0.0.1:7070.
	URL(member string) string
	// Transport is how client reaches the members' APIs.
	Transport(client string) http.RoundTripper
}
