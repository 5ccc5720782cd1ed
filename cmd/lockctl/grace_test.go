package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// Goal: lockctl acquire --grace sends the grace window (status shows the
// expired lease in grace, with the window's length) and refuses a grace
// above the TTL as a usage error. Method: one member; acquire with a short
// TTL, let it expire, status through lockctl.
func TestAcquireGraceOnAMember(t *testing.T) {
	ep := startMember(t)
	if code, _, errOut := lockctl(t, "--endpoints", ep, "acquire", "job", "--ttl", "1s", "--grace", "2s"); code != exitUsage {
		t.Fatalf("acquire --grace above --ttl: exit %d %q, want %d", code, errOut, exitUsage)
	}
	if code, out, errOut := lockctl(t, "--endpoints", ep, "acquire", "job", "--ttl", "1s", "--grace", "1s"); code != exitOK {
		t.Fatalf("acquire --grace: exit %d %q %q", code, out, errOut)
	}
	// Past the TTL for sure (the grant came before lockctl returned), well
	// inside the window (it ends 1s later).
	time.Sleep(1100 * time.Millisecond)
	code, out, errOut := lockctl(t, "--endpoints", ep, "status", "job")
	var st api.StatusResponse
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status: exit %d %q %q", code, out, errOut)
	}
	if len(st.Holders) != 1 || st.Holders[0].State != api.HolderGrace || st.Holders[0].GraceMs != 1000 {
		t.Fatalf("status in the grace window: %+v, want one holder in grace of 1000ms", st.Holders)
	}
}
