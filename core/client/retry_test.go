package client

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"
)

// failingTransport refuses every request at once (the shard map fetch a
// failed leader attempt starts in the background).
type failingTransport struct{}

func (failingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("refused")
}

// TestRetryAsksNoFailedEndpointTwiceWhileAnotherRemains: goal — within one
// call, an endpoint that failed is not asked again while another has not
// been asked, even when the cached shard map still names it leader (the
// orphanWaiters runs where a release went twice to one dead member while a
// live one was never asked, and the lease then outlived the call). Method:
// endpoints a, b, c, the map names b leader, b fails, a answers; with two
// attempts the call must reach a (b, then a; the rotation used to land on b
// again), and when all fail, four attempts ask every endpoint once before
// any is asked again.
func TestRetryAsksNoFailedEndpointTwiceWhileAnotherRemains(t *testing.T) {
	const a, b, cURL = "http://a.test", "http://b.test", "http://c.test"
	newClient := func(t *testing.T, attempts int) *Client {
		t.Helper()
		c, err := New(Config{Endpoints: []string{a, b, cURL}, MaxAttempts: attempts, BackoffBase: time.Millisecond,
			BackoffMax: time.Millisecond, HTTPClient: &http.Client{Transport: failingTransport{}}})
		if err != nil {
			t.Fatal(err)
		}
		c.routes.current.Store(&routeMap{version: 1, leaders: []string{b}, fetched: time.Now()})
		return c
	}
	serverDown := &APIError{Status: http.StatusServiceUnavailable, Code: "unavailable"}

	t.Run("reaches the endpoint not yet asked", func(t *testing.T) {
		c := newClient(t, 2)
		var asked []string
		err := c.retry(context.Background(), "release", "r", func(_ context.Context, endpoint string) error {
			asked = append(asked, endpoint)
			if endpoint == b {
				return serverDown
			}
			return nil
		})
		if err != nil || !slices.Equal(asked, []string{b, a}) {
			t.Fatalf("asked %v, err %v; want [b a] and success", asked, err)
		}
	})
	t.Run("every endpoint once before any twice", func(t *testing.T) {
		c := newClient(t, 4)
		var asked []string
		err := c.retry(context.Background(), "release", "r", func(_ context.Context, endpoint string) error {
			asked = append(asked, endpoint)
			return serverDown
		})
		if err == nil {
			t.Fatal("want an error: every attempt failed")
		}
		if len(asked) != 4 {
			t.Fatalf("asked %v, want 4 attempts", asked)
		}
		first := slices.Clone(asked[:3])
		slices.Sort(first)
		if !slices.Equal(first, []string{a, b, cURL}) {
			t.Fatalf("first three attempts %v, want each endpoint once", asked[:3])
		}
	})
}
