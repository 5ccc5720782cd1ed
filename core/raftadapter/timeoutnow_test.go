package raftadapter

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"
)

// silentTimeoutNow answers TimeoutNow only after delay, as a transport
// whose request or answer was lost does at its own timeout.
type silentTimeoutNow struct {
	raft.Transport
	delay time.Duration
}

func (s silentTimeoutNow) TimeoutNow(_ raft.ServerID, _ raft.ServerAddress, _ *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	time.Sleep(s.delay)
	resp.ID = []byte("b")
	return nil
}

// TestTimeoutNowBounded: goal — with a bound, an unanswered TimeoutNow
// gives up at the bound (raft refuses entries until it returns); an answer
// within the bound and a zero bound pass the wrapped call through.
func TestTimeoutNowBounded(t *testing.T) {
	cases := []struct {
		name         string
		bound, delay time.Duration
		wantErr      bool
		wantTook     time.Duration
	}{
		{"unanswered gives up at the bound", 100 * time.Millisecond, 5 * time.Second, true, 100 * time.Millisecond},
		{"answered within the bound", 100 * time.Millisecond, 10 * time.Millisecond, false, 10 * time.Millisecond},
		{"no bound waits", 0, 5 * time.Second, false, 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := GroupTransport(silentTimeoutNow{delay: c.delay}, c.bound)
				var resp raft.TimeoutNowResponse
				start := time.Now()
				err := tr.TimeoutNow("b", "b", &raft.TimeoutNowRequest{}, &resp)
				took := time.Since(start)
				if (err != nil) != c.wantErr || took != c.wantTook {
					t.Fatalf("err %v after %s; want error %v after %s", err, took, c.wantErr, c.wantTook)
				}
				if got := string(resp.ID); got != map[bool]string{true: "", false: "b"}[c.wantErr] {
					t.Errorf("resp from %q; an answer is copied only when it came in time", got)
				}
				time.Sleep(c.delay) // let the abandoned call end inside the bubble
			})
		})
	}
}
