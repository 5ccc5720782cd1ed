package models

import (
	"errors"
	"fmt"
	"slices"
)

var (
	errFalseInvalid   = errors.New("validate said not valid for a certainly live holder's token")
	errValidNotHolder = errors.New("validate said valid for a token no possible holder carries")
	errValidInGrace   = errors.New("validate said valid for a lease whose TTL surely ran out (in its grace window)")
)

// validate judges a validate reply at its log time: valid must equal "the
// token is a holder's". The reply names no lease, so the model learns
// nothing from it beyond log time and keeps every lease as it was (sound:
// dropping a lease a "not valid" proves dead would only sharpen later
// judgements). Valid is legal for a lease that is possibly live, or, when
// no known lease carries the token, for a phantom (an unseen grant of an
// indefinite acquire, whose token the model cannot know); not valid is
// legal unless the token's lease is certainly live.
func (sp lockSpec) validate(s lockState, in LockInput, out LockOutput) ([]lockState, error) {
	if out.Unknown || out.Code != "" {
		return []lockState{s}, nil
	}
	n, err := sp.advance(s, out.LogTimeNs)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(n.leases, func(l lease) bool { return l.Token == in.Token })
	switch {
	case !out.Valid && i >= 0 && sp.certainlyValid(n.leases[i], n.logTime):
		return nil, fmt.Errorf("%w: #%d (%s) lives until %s, answered at %s", errFalseInvalid, in.Token, n.leases[i].ID,
			fmtTime(n.leases[i].ExpiresAt), fmtTime(n.logTime))
	case out.Valid && i < 0 && n.phantoms == 0:
		return nil, fmt.Errorf("%w: #%d at %s", errValidNotHolder, in.Token, fmtTime(n.logTime))
	case out.Valid && i >= 0 && sp.certainlyInGrace(n.leases[i], n.logTime):
		return nil, fmt.Errorf("%w: #%d (%s) expired at %s, answered at %s", errValidInGrace, in.Token, n.leases[i].ID,
			fmtTime(n.leases[i].ExpiresAt), fmtTime(n.logTime))
	}
	return []lockState{n}, nil
}
