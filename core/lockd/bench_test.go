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
	"github.com/lockstep/lockstep/core/node"
)

// BenchmarkReplicatedCycle measures acquire+release cycles through Raft on
// three real members (loopback TCP, fsync on), called on the leader's node
// directly — the consensus and disk cost without HTTP/JSON. One op is one
// cycle; 16 concurrent callers on distinct keys.
func BenchmarkReplicatedCycle(b *testing.B) {
	for _, store := range []node.LogStoreKind{node.LogStoreWAL, node.LogStoreBolt} {
		b.Run(string(store), func(b *testing.B) {
			c := startClusterTB(b, store)
			n := c.members[c.leader()].Node
			const callers = 16
			var next atomic.Int64
			var mu sync.Mutex
			var lat []time.Duration
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := 0; w < callers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					ctx := context.Background()
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						start := time.Now()
						res, err := n.Acquire(ctx, lock.Command{Resource: fmt.Sprintf("k%d-%d", w, i), ClientID: "c", Mode: lock.Exclusive, TTLMs: 10_000})
						if err != nil {
							b.Error(err)
							return
						}
						if _, err := n.Release(ctx, fmt.Sprintf("k%d-%d", w, i), res.Lease.ID); err != nil {
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
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			}
		})
	}
}

// BenchmarkHTTPCycle is the same cycle through the public HTTP/JSON API of
// the leader (handler, JSON, forwarding-free path), 16 concurrent clients on
// distinct keys.
func BenchmarkHTTPCycle(b *testing.B) {
	c := startClusterTB(b, node.LogStoreWAL)
	url := c.url(c.leader())
	const callers = 16
	tr := &http.Transport{MaxIdleConnsPerHost: callers}
	hc := &http.Client{Transport: tr}
	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := 0; w < callers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				start := time.Now()
				key := fmt.Sprintf("k%d-%d", w, i)
				var got api.AcquireResponse
				if err := postJSON(hc, url+api.PathAcquire, api.AcquireRequest{Resource: key, ClientID: "c", TTL: 10_000}, &got); err != nil || !got.Granted {
					b.Errorf("acquire: %v %+v", err, got)
					return
				}
				if err := postJSON(hc, url+api.PathRelease, api.ReleaseRequest{Resource: key, LeaseID: got.LeaseID}, nil); err != nil {
					b.Errorf("release: %v", err)
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
