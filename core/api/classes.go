package api

// What an error answer proves about the request it answers. The members'
// front ends, the gateway, the Go client and lockctl all decide by these
// whether to retry a request and where, so the rule lives here, with the
// codes, and in no other place.

// NotApplied reports whether an answer with code c proves that the request
// was not applied: it was refused before anything was done (unavailable:
// no leader took it in time, or the member is stopping; overloaded: the
// member was at its in-flight bound). Retrying any request, on the same
// member or another, is safe.
func (c Code) NotApplied() bool {
	return c == CodeUnavailable || c == CodeOverloaded
}

// Indefinite reports whether an answer with code c leaves open whether the
// request was applied: outcome_unknown (it reached a leader, and its result
// was lost), internal, and any code this build does not know. Retry an
// acquire under its request_id (answered from what became of the first);
// check before retrying a release or renew.
func (c Code) Indefinite() bool {
	switch c {
	case CodeInvalidArgument, CodeCrossShard, CodeBadGrace, CodeNotHolder, CodeRequestIDReused, CodeLeaseEnded,
		CodeFailedPrecondition, CodeUnauthenticated, CodePermissionDenied, CodeNotFound,
		CodeMethodNotAllowed, CodeResourceExhausted, CodeCompacted, CodeUnavailable, CodeOverloaded,
		CodeBadPermits, CodePermitsMismatch, CodeDeadlock:
		return false
	}
	return true
}

// Retryable reports whether another attempt may succeed where one answered
// with code c failed: the request surely was not applied, or its outcome
// is unknown (an idempotent retry settles it). Every other code is a
// definite answer about the request itself, which repeating it gets again.
// These are exactly the codes answered with a 5xx status.
func (c Code) Retryable() bool { return c.NotApplied() || c.Indefinite() }
