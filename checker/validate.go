package checker

import (
	"fmt"

	"github.com/lockstep/lockstep/models"
)

// CheckValidate: a validate read through the log called a token valid
// after its lease had surely ended.
const CheckValidate = "validate"

// checkValidate holds every definite "valid" answer against the leases
// the history shows ended before the validate was called: a definite
// release of the lease, or a not_holder for it, returned earlier. The
// model judges validates too, but lets a token it knows no lease for pass
// as a possible phantom's; this check knows which lease each token named.
//
// It cannot flag a correct server: a token names one lease (every grant
// takes a fresh token; a replayed answer names the same lease), a lease
// that ended never holds again, and a validate called after that answer
// returned is linearized after the end, where the lease is no holder and
// no other lease carries its token. Stale validates are not recorded.
func checkValidate(h *History, f *findings) {
	type key struct {
		resource string
		token    uint64
	}
	leaseOf := make(map[key]string) // token -> lease id, from definite answers
	ended := make(map[string]int64) // lease id -> earliest return proving it over
	end := func(lease string, at int64) {
		if cur, ok := ended[lease]; !ok || at < cur {
			ended[lease] = at
		}
	}
	for _, op := range h.Ops {
		in, out := op.Input, op.Output
		if out.Unknown {
			continue
		}
		switch {
		case in.Op == models.Acquire && (out.Code == "" && out.Granted || out.Code == models.CodeLeaseEnded):
			leaseOf[key{in.Resource, out.Token}] = out.LeaseID
		case in.Op == models.AcquireMany && out.Code == "":
			for _, l := range out.Leases {
				leaseOf[key{l.Resource, l.Token}] = l.LeaseID
			}
		case in.Op == models.Renew && out.Code == "":
			leaseOf[key{in.Resource, out.Token}] = in.LeaseID
		}
		switch {
		case in.Op == models.Release && (out.Code == "" || out.Code == models.CodeNotHolder):
			end(in.LeaseID, op.Return)
		case in.Op == models.Renew && out.Code == models.CodeNotHolder:
			end(in.LeaseID, op.Return)
		}
	}
	for _, op := range h.Ops {
		in, out := op.Input, op.Output
		if in.Op != models.Validate || out.Unknown || out.Code != "" || !out.Valid {
			continue
		}
		lease, ok := leaseOf[key{in.Resource, in.Token}]
		if !ok {
			continue
		}
		if at, ok := ended[lease]; ok && at < op.Call {
			f.add(Violation{Check: CheckValidate, Resource: in.Resource, At: out.LogTimeNs, Message: fmt.Sprintf(
				"token %d called valid at log time %s, but its lease %s was over by %s, before the validate was called (%s)",
				in.Token, fmtNs(out.LogTimeNs), lease, fmtNs(at), fmtNs(op.Call))})
		}
	}
}
