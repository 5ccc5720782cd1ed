package models

import (
	"errors"
	"fmt"
)

// errOvercount: a semaphore of N had more than N holders at once.
var errOvercount = errors.New("semaphore holds more than its permits")

// admitSemaphore adds l, a permit of a semaphore of permits (N) granted
// at n.logTime: N holders certainly live at that time (or a shared one,
// which a semaphore never has) make that impossible. Unlike a plain
// lock's grant, it proves no maybe-live holder dead (a permit may have
// been free beside it), so every lease is kept: sound, since a lease only
// maybe live is never counted against a later grant.
func (sp lockSpec) admitSemaphore(n lockState, l lease, permits int64) (lockState, error) {
	live := 0
	for _, o := range n.leases {
		if !sp.certainlyLive(o, n.logTime) {
			continue
		}
		if o.Mode != Exclusive || l.Mode != Exclusive {
			return n, fmt.Errorf("%w: %s %s (#%d) granted a permit of %d at %s while %s %s (#%d) lives until %s",
				errConflict, shortMode(l.Mode), l.ID, l.Token, permits, fmtTime(n.logTime), shortMode(o.Mode), o.ID, o.Token, fmtTime(o.ExpiresAt))
		}
		live++
	}
	if int64(live) >= permits {
		return n, fmt.Errorf("%w: %s (#%d) granted at %s while all %d permits are certainly held", errOvercount, l.ID, l.Token, fmtTime(n.logTime), permits)
	}
	n.tokenFloor = max(n.tokenFloor, l.Token+1)
	return n.with(l), nil
}

// statusHoldersFit judges the shape of a status reply's live holders:
// one exclusive or only shared ones, or for a semaphore of permits > 1
// up to that many, all exclusive.
func statusHoldersFit(holders, exclusive int, permits int64) error {
	if permits > 1 {
		if exclusive != holders || int64(holders) > permits {
			return fmt.Errorf("%w: a semaphore of %d lists %d holders, %d exclusive", errOvercount, permits, holders, exclusive)
		}
		return nil
	}
	if exclusive > 0 && holders > 1 {
		return fmt.Errorf("%w: %d holders including %d exclusive", errStatusMismatch, holders, exclusive)
	}
	return nil
}
