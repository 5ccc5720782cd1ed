package bench

import (
	"context"
	"time"
)

// expired reports whether ctx is done or past its deadline. Clients copy a
// context's deadline onto sockets, and a socket timeout can fire a moment
// before the context itself reports DeadlineExceeded; without this, the end
// of every run would show up as a burst of "transport" errors.
func expired(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}
