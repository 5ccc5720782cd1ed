package realnet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// FailoverOptions describe one failover measurement.
type FailoverOptions struct {
	Bin string
	// Dir holds the members' data; it must exist.
	Dir string
	// Rounds is how many leader kills, and as many partition heals.
	Rounds int
	// LockdArgs are added to every member (the Raft timeouts under test).
	LockdArgs []string
	// PartitionHold is how long every link stays cut before a heal.
	PartitionHold time.Duration
}

// FailoverResult holds the measured times, one per round.
type FailoverResult struct {
	// Kill: leader kill -9 -> first acquire granted, sent after the kill.
	Kill []time.Duration
	// Heal: full partition healed -> first acquire granted.
	Heal []time.Duration
}

// failoverLimit bounds one round's wait for a grant.
const failoverLimit = 20 * time.Second

// MeasureFailover runs a 3-member cluster without other load and, each
// round, kills the leader with kill -9 and times the first successful
// grant seen by probing clients (every member, every 5 ms, fresh resource
// per attempt); it then restarts the victim. The heal rounds cut every
// link for PartitionHold (no quorum anywhere), heal, and time the first
// grant after the heal.
func MeasureFailover(ctx context.Context, opts FailoverOptions) (FailoverResult, error) {
	var res FailoverResult
	c, err := NewCluster(ClusterOptions{Bin: opts.Bin, Dir: opts.Dir, Nodes: 3, Args: opts.LockdArgs})
	if err != nil {
		return res, err
	}
	defer c.Shutdown()
	if err := c.awaitLeaders(ctx, 30*time.Second); err != nil {
		return res, err
	}
	for round := range opts.Rounds {
		if err := c.settle(ctx); err != nil {
			return res, fmt.Errorf("kill round %d: %w", round, err)
		}
		lead, ok := c.Leader()
		if !ok {
			return res, fmt.Errorf("kill round %d: no leader", round)
		}
		d, err := c.timeGrant(ctx, func() { _ = c.Crash(lead) })
		if err != nil {
			return res, fmt.Errorf("kill round %d: %w", round, err)
		}
		res.Kill = append(res.Kill, d)
		if err := c.Restart(lead); err != nil {
			return res, err
		}
	}
	for round := range opts.Rounds {
		if err := c.settle(ctx); err != nil {
			return res, fmt.Errorf("heal round %d: %w", round, err)
		}
		ids := c.Nodes()
		c.Cut([][2]string{{ids[0], ids[1]}, {ids[0], ids[2]}, {ids[1], ids[2]}})
		time.Sleep(opts.PartitionHold)
		d, err := c.timeGrant(ctx, func() { c.Cut(nil) })
		if err != nil {
			return res, fmt.Errorf("heal round %d: %w", round, err)
		}
		res.Heal = append(res.Heal, d)
	}
	return res, nil
}

// settle waits until every member is up, one leads, a grant succeeds and
// the leader stays put for a second (a restarted member caught up).
func (c *Cluster) settle(ctx context.Context) error {
	deadline := time.Now().Add(failoverLimit)
	for time.Now().Before(deadline) {
		lead, ok := c.Leader()
		if ok && c.probeOnce(ctx, "settle") {
			time.Sleep(time.Second)
			if again, ok := c.Leader(); ok && again == lead {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("cluster did not settle within %s", failoverLimit)
}

// timeGrant runs fault, then probes every member until one grants; it
// returns the time from the fault to the reply of the first attempt, sent
// after the fault, that was granted.
func (c *Cluster) timeGrant(ctx context.Context, fault func()) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, failoverLimit)
	defer cancel()
	fault()
	start := time.Now()
	first := make(chan time.Time, len(c.order))
	var wg sync.WaitGroup
	for _, id := range c.order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ctx.Err() == nil; seq++ {
				if c.probe(ctx, id, fmt.Sprintf("failover-%d-%s-%d", start.UnixNano(), id, seq)) {
					first <- time.Now()
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
	}
	var got time.Time
	select {
	case got = <-first:
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	if got.IsZero() {
		return 0, fmt.Errorf("no grant within %s", failoverLimit)
	}
	return got.Sub(start), nil
}

func (c *Cluster) probeOnce(ctx context.Context, tag string) bool {
	for _, id := range c.order {
		if c.probe(ctx, id, fmt.Sprintf("%s-%d", tag, time.Now().UnixNano())) {
			return true
		}
	}
	return false
}

// probe sends one try-lock acquire of a fresh resource to member id.
func (c *Cluster) probe(ctx context.Context, id, resource string) bool {
	body, _ := json.Marshal(api.AcquireRequest{Resource: resource, ClientID: "failover-probe", TTLMs: 1000})
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL(id)+api.PathAcquire, bytes.NewReader(body))
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var a api.AcquireResponse
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&a) == nil && a.Granted
}

// Percentile is the q-quantile (0..1) of ds by nearest rank.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
