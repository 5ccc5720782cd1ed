package client

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Goal: New rejects unusable configs and fills defaults. Method: table of
// configs, each either failing or checked for its effective values.
func TestNewValidatesConfig(t *testing.T) {
	ok := []string{"http://127.0.0.1:7070"}
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no endpoints", Config{}, "no endpoints"},
		{"no scheme", Config{Endpoints: []string{"127.0.0.1:7070"}}, "endpoint"},
		{"wrong scheme", Config{Endpoints: []string{"ftp://h:1"}}, "not an http(s)"},
		{"no host", Config{Endpoints: []string{"http://"}}, "not an http(s)"},
		{"unparsable", Config{Endpoints: []string{"http://[::1"}}, "endpoint"},
		{"too many", Config{Endpoints: make([]string, maxEndpoints+1)}, "exceed"},
		{"negative base", Config{Endpoints: ok, BackoffBase: -1}, "negative"},
		{"negative margin", Config{Endpoints: ok, SafetyMargin: -time.Second}, "negative"},
		{"negative attempts", Config{Endpoints: ok, MaxAttempts: -1}, "MaxAttempts"},
		{"max below base", Config{Endpoints: ok, BackoffBase: time.Second, BackoffMax: time.Millisecond}, "below"},
		{"valid", Config{Endpoints: []string{"http://a:1/", "https://b:2"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New error = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(c.ID()) {
				t.Errorf("generated client id %q is not 128-bit hex", c.ID())
			}
			if c.endpoints[0] != "http://a:1" {
				t.Errorf("trailing slash kept: %q", c.endpoints[0])
			}
			if c.maxAttempts != defaultMaxAttempts || c.backoff.base != defaultBackoffBase ||
				c.backoff.max != defaultBackoffMax || c.attemptTimeout != defaultAttemptTimeout {
				t.Errorf("defaults not applied: %+v", c)
			}
		})
	}
}

// Goal: an explicit client id is kept and generated ids differ. Method:
// build clients and compare ids.
func TestClientID(t *testing.T) {
	ep := []string{"http://127.0.0.1:1"}
	if got := newTestClient(t, Config{Endpoints: ep, ClientID: "me"}).ID(); got != "me" {
		t.Errorf("ID = %q, want me", got)
	}
	a, b := newTestClient(t, Config{Endpoints: ep}).ID(), newTestClient(t, Config{Endpoints: ep}).ID()
	if a == b {
		t.Errorf("two generated client ids are equal: %q", a)
	}
}

// Goal: the default safety margin is 10% of expires_in capped at 1s and an
// explicit margin overrides it. Method: table over validUntil.
func TestValidUntilMargin(t *testing.T) {
	sent := time.Unix(100, 0)
	tests := []struct {
		margin      time.Duration
		expiresInMs int64
		want        time.Duration
	}{
		{0, 10_000, 9 * time.Second},
		{0, 100, 90 * time.Millisecond},
		{0, 60_000, 59 * time.Second},
		{300 * time.Millisecond, 10_000, 9700 * time.Millisecond},
		{20 * time.Second, 10_000, -10 * time.Second},
	}
	for _, tt := range tests {
		c := newTestClient(t, Config{Endpoints: []string{"http://h:1"}, SafetyMargin: tt.margin})
		if got := c.validUntil(sent, tt.expiresInMs).Sub(sent); got != tt.want {
			t.Errorf("margin %v, expires_in %dms: validity %v, want %v", tt.margin, tt.expiresInMs, got, tt.want)
		}
	}
}

// TestSeededRandIsTheOnlyEntropy: goal — with Config.Rand a client's ids and
// retry jitter come from that source alone, so a simulated run replays
// from its seed. Method: two clients on equal seeds draw the same client
// id, request ids and backoff delays; a third on another seed differs.
func TestSeededRandIsTheOnlyEntropy(t *testing.T) {
	draw := func(seed uint64) []string {
		c, err := New(Config{Endpoints: []string{"http://127.0.0.1:1"}, Rand: rand.New(rand.NewPCG(seed, 1))})
		if err != nil {
			t.Fatal(err)
		}
		out := []string{c.ID()}
		for i := range 3 {
			out = append(out, c.entropy.id(), c.backoff.delay(i+3).String())
		}
		return out
	}
	a, b, other := draw(7), draw(7), draw(8)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different draws:\n%v\n%v", a, b)
	}
	if slices.Equal(a, other) {
		t.Fatalf("different seeds, same draws: %v", a)
	}
}
