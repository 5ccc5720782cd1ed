package lockd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/tlsconf"
)

// BenchmarkReplicatedCycle measures acquire+release cycles through Raft on
// three real members (loopback TCP, fsync on), called on the leader's node
// directly — the consensus and disk cost without HTTP/JSON. One op is one
// cycle; 16 concurrent callers on distinct keys.
func BenchmarkReplicatedCycle(b *testing.B) {
	for _, store := range []lockd.LogStoreKind{lockd.LogStoreWAL, lockd.LogStoreBolt} {
		b.Run(string(store), func(b *testing.B) {
			c := startClusterTB(b, store)
			n := c.members[c.leader()].Shard(1)
			ctx := context.Background()
			runCycles(b, func(key string) error {
				res, err := n.Acquire(ctx, lock.Command{Resource: key, ClientID: "c", Mode: lock.Exclusive, TTLMs: 10_000})
				if err != nil {
					return err
				}
				_, err = n.Release(ctx, key, res.Lease.ID)
				return err
			})
		})
	}
}

// BenchmarkHTTPCycle is the same cycle through the public HTTP/JSON API of
// the leader (handler, JSON, forwarding-free path), 16 concurrent clients on
// distinct keys.
func BenchmarkHTTPCycle(b *testing.B) {
	c := startClusterTB(b, lockd.LogStoreWAL)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchCallers}}
	runCycles(b, httpCycle(hc, c.url(c.leader())))
}

// BenchmarkHTTPSCycle is BenchmarkHTTPCycle with TLS everywhere: mutual
// TLS on the member port (Raft replication) and HTTPS with a client
// certificate on the API; the difference is what TLS costs a cycle.
func BenchmarkHTTPSCycle(b *testing.B) {
	p := issuePKI(b, []string{"n1", "n2", "n3"}, []string{"app"})
	c := startClusterTB(b, lockd.LogStoreWAL, p.member)
	app := p.clients["app"]
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchCallers, TLSClientConfig: tlsconf.Client(p.ca, &app)}}
	runCycles(b, httpCycle(hc, c.members[c.leader()].URL()))
}

// httpCycle is an acquire and a release of key through url's API.
func httpCycle(hc *http.Client, url string) func(key string) error {
	return func(key string) error {
		var got api.AcquireResponse
		if err := postJSON(hc, url+api.PathAcquire, api.AcquireRequest{Resource: key, ClientID: "c", TTLMs: 10_000}, &got); err != nil {
			return err
		}
		if !got.Granted {
			return fmt.Errorf("acquire of fresh key %s refused", key)
		}
		return postJSON(hc, url+api.PathRelease, api.ReleaseRequest{Resource: key, LeaseID: got.LeaseID}, nil)
	}
}

// benchCallers is the closed-loop concurrency of the cycle benchmarks.
const benchCallers = 16

// runCycles runs b.N cycles over benchCallers goroutines, each cycle on a
// fresh key, and reports cycles/s and latency percentiles.
func runCycles(b *testing.B, cycle func(key string) error) {
	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := 0; w < benchCallers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				start := time.Now()
				if err := cycle(fmt.Sprintf("k%d-%d", w, i)); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(start))
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(len(lat))/b.Elapsed().Seconds(), "cycles/s")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}

func postJSON(hc *http.Client, url string, body, out any) error {
	buf, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp, err := hc.Post(url, "application/json", bytes.NewReader(buf))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
