package main

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/client"
)

// Goal: a token is valid while its lease holds the lock and not once it is
// released, on a real member, through lockctl (exit 0 valid, 1 not) and
// the Go client alike. Method: one member; acquire, validate, release,
// validate again; then a token that is not a number (exit 2 is only for a
// wrong command line: the server's 400 is a failed request, exit 1).
func TestValidateOnAMember(t *testing.T) {
	ep := startMember(t)
	c, err := client.New(client.Config{Endpoints: []string{ep}, ClientID: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	lease, err := c.Acquire(ctx, "job", client.AcquireOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	token := strconv.FormatUint(lease.Token(), 10)
	validate := func(want bool, wantCode int) {
		t.Helper()
		code, out, errOut := lockctl(t, "--endpoints", ep, "validate", "job", token)
		var got api.ValidateResponse
		if code != wantCode || json.Unmarshal([]byte(out), &got) != nil || got.Valid != want || got.Token != lease.Token() {
			t.Fatalf("lockctl validate job %s: exit %d %q %q, want exit %d valid %v", token, code, out, errOut, wantCode, want)
		}
		if valid, err := c.Validate(ctx, "job", lease.Token()); err != nil || valid != want {
			t.Fatalf("client Validate = %v, %v; want %v", valid, err, want)
		}
	}
	validate(true, exitOK)
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	validate(false, exitFailed)
	if code, out, errOut := lockctl(t, "--endpoints", ep, "validate", "job", "x"); code != exitFailed || out != "" || errOut == "" {
		t.Errorf("validate with token x: exit %d %q %q, want %d and an error", code, out, errOut, exitFailed)
	}
}
