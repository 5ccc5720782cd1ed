package grpcapi

import "testing"

// TestOpNames: goal — gRPC calls are logged and counted under the HTTP
// operation names (acquire, keep_alive), so one dashboard covers both.
func TestOpNames(t *testing.T) {
	for method, want := range map[string]string{
		"/lockstep.v1.Lock/Acquire":       "acquire",
		"/lockstep.v1.Lock/AcquireStream": "acquire_stream",
		"/lockstep.v1.Lock/KeepAlive":     "keep_alive",
		"/lockstep.v1.Lock/Cluster":       "cluster",
	} {
		if got := opName(method); got != want {
			t.Errorf("opName(%s) = %q, want %q", method, got, want)
		}
	}
}
