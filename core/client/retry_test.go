package client

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
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
		c.routes.Update(api.ClusterResponse{MapVersion: 1, Shards: []api.Shard{{ID: 1, LeaderHTTP: b}}})
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

// TestRetryAsksTheLongestFailedFirst: goal — once every endpoint has failed
// a call, the next attempt goes to the one that failed longest ago, not to
// the cached leader hint that just failed (a map fetched just after a
// leader dies still names it, so a release could spend its last attempt on
// the dead member its previous attempt had just failed on, while the member
// asked first, elected since, was not asked again). Method: endpoints a, b,
// c; every attempt fails, or all but those of one endpoint from some attempt
// on (a member elected meanwhile); the map is empty, or names a leader from
// the start, or only from a given attempt on (a background refresh landing
// mid-call); the endpoints asked must be exactly as listed.
func TestRetryAsksTheLongestFailedFirst(t *testing.T) {
	const a, b, cURL = "http://a.test", "http://b.test", "http://c.test"
	serverDown := &APIError{Status: http.StatusServiceUnavailable, Code: "unavailable"}
	cases := []struct {
		name     string
		attempts int
		leader   string // the map's leader of the shard, "" for none
		mapFrom  int    // the attempt (0-based) before which the map is published
		answers  string // the endpoint that answers from attempt answerAt (0-based) on, "" for none
		answerAt int
		want     []string
	}{
		{name: "a hint published mid-call that then fails is not asked twice in a row", attempts: 4, leader: cURL, mapFrom: 2,
			want: []string{a, b, cURL, a}},
		{name: "the rotation continues in failure order", attempts: 7, leader: cURL, mapFrom: 2,
			want: []string{a, b, cURL, a, b, cURL, a}},
		{name: "the member asked first, since elected, answers the last attempt", attempts: 4, leader: cURL, mapFrom: 2,
			answers: a, answerAt: 3, want: []string{a, b, cURL, a}},
		{name: "a hint known from the start fails first, so it is asked first again", attempts: 5, leader: b,
			want: []string{b, a, cURL, b, a}},
		{name: "no map: the endpoints in turn", attempts: 5,
			want: []string{a, b, cURL, a, b}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{Endpoints: []string{a, b, cURL}, MaxAttempts: tc.attempts, BackoffBase: time.Millisecond,
				BackoffMax: time.Millisecond, HTTPClient: &http.Client{Transport: failingTransport{}}})
			if err != nil {
				t.Fatal(err)
			}
			publish := func() {
				c.routes.Update(api.ClusterResponse{MapVersion: 1, Shards: []api.Shard{{ID: 1, LeaderHTTP: tc.leader}}})
			}
			if tc.leader != "" && tc.mapFrom == 0 {
				publish()
			}
			var asked []string
			err = c.retry(context.Background(), "release", "r", func(_ context.Context, endpoint string) error {
				asked = append(asked, endpoint)
				if tc.leader != "" && len(asked) == tc.mapFrom {
					publish()
				}
				if endpoint == tc.answers && len(asked) > tc.answerAt {
					return nil
				}
				return serverDown
			})
			if (err == nil) != (tc.answers != "") {
				t.Fatalf("err %v, want success only when %q answers", err, tc.answers)
			}
			if !slices.Equal(asked, tc.want) {
				t.Fatalf("asked %v, want %v", asked, tc.want)
			}
		})
	}
}
