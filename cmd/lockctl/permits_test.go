package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/client"
)

// Goal: lockctl acquire --permits N takes one permit of a semaphore of N
// on a real member: two holders at once with increasing tokens, a third
// refused (exit 3), another N refused as permits_mismatch (exit 1), an N
// out of range refused before sending (exit 2); the Go client's Permits
// and Status say the same.
func TestAcquirePermits(t *testing.T) {
	ep := startMember(t)
	acquire := func(client string, extra ...string) (int, api.AcquireResponse, string) {
		t.Helper()
		args := append([]string{"--endpoints", ep, "--client-id", client, "acquire", "pool", "--ttl", "1m"}, extra...)
		code, out, errOut := lockctl(t, args...)
		var got api.AcquireResponse
		if out != "" {
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("lockctl %v: %q: %v", args, out, err)
			}
		}
		return code, got, errOut
	}
	codeA, a, _ := acquire("A", "--permits", "2")
	codeB, b, _ := acquire("B", "--permits", "2")
	if codeA != exitOK || codeB != exitOK || !a.Granted || !b.Granted || b.FencingToken <= a.FencingToken {
		t.Fatalf("two permits: exit %d %+v, exit %d %+v; want both granted, tokens increasing", codeA, a, codeB, b)
	}
	if code, c, _ := acquire("C", "--permits", "2"); code != exitNotGranted || c.Granted {
		t.Fatalf("third permit of 2: exit %d %+v, want exit %d", code, c, exitNotGranted)
	}
	if code, _, errOut := acquire("C", "--permits", "3"); code != exitFailed || !strings.Contains(errOut, string(api.CodePermitsMismatch)) {
		t.Fatalf("permits 3 on a semaphore of 2: exit %d %q, want exit %d naming %s", code, errOut, exitFailed, api.CodePermitsMismatch)
	}
	if code, _, errOut := acquire("C"); code != exitFailed || !strings.Contains(errOut, string(api.CodePermitsMismatch)) {
		t.Fatalf("plain acquire on a semaphore: exit %d %q, want exit %d naming %s", code, errOut, exitFailed, api.CodePermitsMismatch)
	}
	for _, bad := range [][]string{{"--permits", "1025"}, {"--permits", "-1"}, {"--permits", "2", "--mode", "shared"}} {
		if code, _, _ := acquire("C", bad...); code != exitUsage {
			t.Errorf("acquire %v: exit %d, want %d", bad, code, exitUsage)
		}
	}

	c, err := client.New(client.Config{Endpoints: []string{ep}, ClientID: "D"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	st, err := c.Status(ctx, "pool")
	if err != nil || st.Permits != 2 || len(st.Holders) != 2 {
		t.Fatalf("status: %+v, %v; want permits 2 and two holders", st, err)
	}
	if _, err := c.Acquire(ctx, "pool", client.AcquireOptions{TTL: 1e9, Permits: 3}); err == nil || !strings.Contains(err.Error(), string(api.CodePermitsMismatch)) {
		t.Fatalf("client Permits 3 on a semaphore of 2: %v, want %s", err, api.CodePermitsMismatch)
	}
	if _, err := c.Acquire(ctx, "pool", client.AcquireOptions{TTL: 1e9, Permits: api.MaxPermits + 1}); err == nil {
		t.Fatal("client Permits above MaxPermits accepted")
	}
	if code, _, _ := lockctl(t, "--endpoints", ep, "release", "pool", a.LeaseID); code != exitOK {
		t.Fatalf("release A: exit %d", code)
	}
	l, err := c.Acquire(ctx, "pool", client.AcquireOptions{TTL: 1e9, Permits: 2})
	if err != nil || l.Token() <= b.FencingToken {
		t.Fatalf("permit freed by A: %v, %v; want granted above #%d", l, err, b.FencingToken)
	}
}
