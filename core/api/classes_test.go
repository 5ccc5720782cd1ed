package api

import "testing"

// TestErrorClasses: goal — every code is in exactly one class (surely not
// applied, indefinite, or a definite refusal), and the retryable ones are
// exactly those answered with a 5xx, which clients that see only a status
// (a proxy's reply) fall back on. Method: every known code, and one this
// build does not know.
func TestErrorClasses(t *testing.T) {
	codes := []Code{CodeInvalidArgument, CodeNotHolder, CodeRequestIDReused, CodeLeaseEnded, CodeUnavailable,
		CodeOverloaded, CodeOutcomeUnknown, CodeNotFound, CodeMethodNotAllowed, CodeResourceExhausted, CodeCrossShard,
		CodeInternal, CodeUnauthenticated, CodePermissionDenied, CodeFailedPrecondition, CodeCompacted, CodeDeadlock, CodeBadGrace, Code("from_the_future")}
	for _, c := range codes {
		if c.NotApplied() && c.Indefinite() {
			t.Errorf("%s is both surely not applied and indefinite", c)
		}
		if got, want := c.Retryable(), c.HTTPStatus() >= 500; got != want {
			t.Errorf("%s: retryable %v, but HTTP %d", c, got, c.HTTPStatus())
		}
	}
	for c, want := range map[Code][2]bool{
		CodeUnavailable: {true, false}, CodeOverloaded: {true, false}, CodeOutcomeUnknown: {false, true},
		CodeInternal: {false, true}, Code("from_the_future"): {false, true}, CodeNotHolder: {false, false},
	} {
		if c.NotApplied() != want[0] || c.Indefinite() != want[1] {
			t.Errorf("%s: not applied %v, indefinite %v; want %v", c, c.NotApplied(), c.Indefinite(), want)
		}
	}
}
