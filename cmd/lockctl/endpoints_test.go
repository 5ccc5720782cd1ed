package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// Goal: a member that answers 503 overloaded did nothing, so lockctl asks
// the next endpoint, as for 503 unavailable, also for a release (not safe
// to repeat after an unknown outcome). Method: a fake member answering
// every request 503 overloaded, listed before a real one; acquire, status
// and release must succeed, each after asking the fake first.
func TestOverloadedEndpointIsSkipped(t *testing.T) {
	var refused atomic.Int32
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		refused.Add(1)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(api.Error{Code: api.CodeOverloaded, Error: "overloaded: busy"})
	}))
	defer busy.Close()
	eps := "--endpoints=" + busy.URL + "," + startMember(t)
	code, out, errOut := lockctl(t, eps, "--client-id", "A", "acquire", "job", "--ttl", "30s")
	var got api.AcquireResponse
	if code != exitOK || json.Unmarshal([]byte(out), &got) != nil || !got.Granted {
		t.Fatalf("acquire past an overloaded member: exit %d %q %q", code, out, errOut)
	}
	for _, args := range [][]string{{"status", "job"}, {"release", "job", got.LeaseID}} {
		if code, out, errOut := lockctl(t, append([]string{eps}, args...)...); code != exitOK {
			t.Fatalf("%s past an overloaded member: exit %d %q %q", strings.Join(args, " "), code, out, errOut)
		}
	}
	if n := refused.Load(); n != 3 {
		t.Fatalf("the overloaded member was asked %d times, want 3 (once per command)", n)
	}
}
