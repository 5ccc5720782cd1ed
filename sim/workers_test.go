package sim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Goal: handing message copies to reused workers never makes one copy wait
// for another. Method: the handler of the first of two concurrent calls
// blocks until the second call's handler has run; both must answer after
// one round trip of virtual time, not time out.
func TestDeliveriesDoNotWaitForEachOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Options{Link: Link{LatencyBase: time.Millisecond}, CallTimeout: time.Second})
		defer n.Close()
		second := make(chan struct{})
		n.Handle("srv", func(_ context.Context, _ string, req []byte) ([]byte, error) {
			switch string(req) {
			case "first":
				<-second
			case "second":
				close(second)
			}
			return req, nil
		})
		// Warm the pool: an idle worker exists when the first call arrives.
		if _, err := n.Call(context.Background(), "cli", "srv", []byte("warm")); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, body := range []string{"first", "second"} {
			wg.Go(func() {
				if i == 1 {
					time.Sleep(time.Millisecond) // arrives while the first handler blocks
				}
				_, errs[i] = n.Call(context.Background(), "cli", "srv", []byte(body))
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}
		if took := time.Since(start); took > 10*time.Millisecond {
			t.Errorf("calls took %v of virtual time, want about two round trips", took)
		}
	})
}

// Goal: the delivery workers end with the Network, so none outlives a
// synctest bubble. Method: count goroutines, run concurrent calls (which
// start several workers), close the network, wait for the bubble to
// settle and count again.
func TestWorkersEndWithNetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before := workers()
		n := NewNetwork(Options{Link: Link{LatencyBase: time.Millisecond, LatencyJitter: time.Millisecond}})
		n.Handle("srv", echo)
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				if _, err := n.Call(context.Background(), "cli", "srv", []byte(fmt.Sprint(i))); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if idle := workers() - before; idle < 1 {
			t.Fatalf("%d goroutines left after the calls, want idle workers", idle)
		}
		n.Close()
		synctest.Wait()
		if left := workers() - before; left > 0 {
			t.Fatalf("%d goroutines left after Close", left)
		}
	})
}

// workers counts the process's delivery workers (any Network's): counting
// every goroutine would also count those an earlier test's leftovers start
// or end meanwhile (seen in CI: -1, then +1).
func workers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "sim.(*Network).work(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// BenchmarkHTTPCall measures one HTTP request and response over the
// simulated network (no latency, so no timers): serialising, the
// delivery goroutines and parsing, with a handler that decodes and
// encodes JSON as lockstep's API does. CPU and allocations per call are
// what a simulation pays per client request on top of the server's work.
func BenchmarkHTTPCall(b *testing.B) {
	n := NewNetwork(Options{CallTimeout: time.Minute})
	defer n.Close()
	n.HandleHTTP("n1", map[string]http.Handler{"7070": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"fencing_token":42,"echo":%q}`, body)
	})})
	c := &http.Client{Transport: &HTTPTransport{Net: n, From: "c1"}}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Post("http://n1:7070/lock/acquire", "application/json",
			strings.NewReader(`{"resource":"r1","client_id":"c1","ttl_ms":1000}`))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
