package lockd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/placement"
)

// acquireReply is one acquire's HTTP answer.
type acquireReply struct {
	status int
	ok     api.AcquireResponse
	err    api.Error
	at     time.Time
}

func acquireHTTP(url string, req api.AcquireRequest) acquireReply {
	b, _ := json.Marshal(req)
	resp, err := http.Post(url+api.PathAcquire, "application/json", bytes.NewReader(b))
	if err != nil {
		return acquireReply{err: api.Error{Error: err.Error()}, at: time.Now()}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := acquireReply{status: resp.StatusCode, at: time.Now()}
	if resp.StatusCode == http.StatusOK {
		_ = json.Unmarshal(raw, &r.ok)
	} else {
		_ = json.Unmarshal(raw, &r.err)
	}
	return r
}

// TestDeadlockAcrossShards: goal — a wait-for cycle through two lock
// shards, which neither shard's state machine can see, is broken by the
// metadata leader's detector within its interval: one of the two waits is
// answered 409 deadlock (its own lock stays held), and once that client
// lets its lock go the other wait is granted. Method: three members, two
// shards, detector every 500 ms; 20 cycles, each A holds x (shard 1) and
// waits for y, B holds y (shard 2) and then waits for x; the delay from
// B's request (the one closing the cycle) to the 409 is logged and must
// stay under 2 s.
func TestDeadlockAcrossShards(t *testing.T) {
	members, _ := startShardedWith(t, 2, 3, func(o *lockd.Options) { o.SpreadInterval = -1 })
	waitFor(t, func() bool {
		for s := 1; s <= 2; s++ {
			if _, ok := members[0].Shard(s).Leader(); !ok {
				return false
			}
		}
		return members[0].Host.Meta().Leader() != ""
	})
	url := members[0].URL()
	name := func(prefix string, i, shard int) string {
		for k := 0; ; k++ {
			if n := fmt.Sprintf("%s%d-%d", prefix, i, k); int(placement.Of(n, 2)) == shard {
				return n
			}
		}
	}
	var delays []time.Duration
	for i := range 20 {
		a, b := fmt.Sprintf("A%d", i), fmt.Sprintf("B%d", i)
		x, y := name("x", i, 1), name("y", i, 2)
		hx := acquireHTTP(url, api.AcquireRequest{Resource: x, ClientID: a, TTLMs: 60_000})
		hy := acquireHTTP(url, api.AcquireRequest{Resource: y, ClientID: b, TTLMs: 60_000})
		if !hx.ok.Granted || !hy.ok.Granted {
			t.Fatalf("cycle %d: takes: %+v %+v", i, hx, hy)
		}
		aWait := make(chan acquireReply, 1)
		go func() {
			aWait <- acquireHTTP(url, api.AcquireRequest{Resource: y, ClientID: a, TTLMs: 60_000, WaitMs: 20_000})
		}()
		waitFor(t, func() bool { return len(status(t, url, y).Queue) == 1 })
		sent := time.Now()
		bWait := make(chan acquireReply, 1)
		go func() {
			bWait <- acquireHTTP(url, api.AcquireRequest{Resource: x, ClientID: b, TTLMs: 60_000, WaitMs: 20_000})
		}()
		// One of the two is the victim; the other is granted once the
		// victim lets its own lock go.
		var other chan acquireReply
		var victimLock api.AcquireResponse
		var victimRes string
		var r acquireReply
		select {
		case r = <-aWait:
			other, victimLock, victimRes = bWait, hx.ok, x
		case r = <-bWait:
			other, victimLock, victimRes = aWait, hy.ok, y
		case <-time.After(10 * time.Second):
			t.Fatalf("cycle %d: no wait ended within 10 s of the cycle closing", i)
		}
		if r.status != http.StatusConflict || r.err.Code != api.CodeDeadlock {
			t.Fatalf("cycle %d: the first wait to end: %d %+v %+v, want 409 deadlock", i, r.status, r.err, r.ok)
		}
		delays = append(delays, r.at.Sub(sent))
		if released, code := post[api.ReleaseResponse](t, url+api.PathRelease, api.ReleaseRequest{Resource: victimRes, LeaseID: victimLock.LeaseID}); code != 200 || !released.Released {
			t.Fatalf("cycle %d: the victim's release: %d", i, code)
		}
		select {
		case g := <-other:
			if !g.ok.Granted {
				t.Fatalf("cycle %d: the other wait: %d %+v %+v, want granted", i, g.status, g.err, g.ok)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("cycle %d: the other wait was not granted after the victim released", i)
		}
	}
	slices.Sort(delays)
	t.Logf("detection delay over %d cross-shard cycles (detector every 500 ms): min %v median %v p90 %v max %v",
		len(delays), delays[0], delays[len(delays)/2], delays[len(delays)*9/10], delays[len(delays)-1])
	if worst := delays[len(delays)-1]; worst > 2*time.Second {
		t.Errorf("slowest detection %v, target <= 2 s", worst)
	}
}
