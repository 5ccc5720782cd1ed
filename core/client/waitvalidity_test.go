package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// These tests pin down which instant a lease's validity counts from after
// an acquire that waited in the queue. The fake server grants a queued
// request when the holder releases, with expires_in = TTL from that moment,
// so validity counted from the first send can be short or already over.

// queuedGrant holds resource with another client, releases it after
// holdFor, and acquires it meanwhile with opts from c. It returns the lease
// (or error) and the instant the acquire was first sent.
func queuedGrant(t *testing.T, fs *fakeServer, c *Client, resource string, holdFor time.Duration, opts AcquireOptions) (*Lease, time.Time, error) {
	t.Helper()
	holder := newInProcessClient(t, fs, Config{})
	ctx := context.Background()
	held, err := holder.Acquire(ctx, resource, AcquireOptions{TTL: time.Hour})
	if err != nil {
		t.Fatalf("holder Acquire: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(holdFor)
		if err := held.Release(ctx); err != nil {
			t.Errorf("holder Release: %v", err)
		}
	}()
	start := time.Now()
	l, err := c.Acquire(ctx, resource, opts)
	<-done
	return l, start, err
}

// Goal: an acquire that waited longer than its TTL returns a usable lease:
// valid, with validity counted from a renew sent right after the grant, and
// the keep-alive renewing from there. Method: TTL 2s, wait up to 8s, the
// holder releases after 3s (fake clock); validity counted from the first
// send would have ended at 1.8s, before the grant.
func TestAcquireWaitLongerThanTTLRenewsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeServer()
		c := newInProcessClient(t, fs, Config{})
		l, start, err := queuedGrant(t, fs, c, "born-dead", 3*time.Second,
			AcquireOptions{TTL: 2 * time.Second, Wait: 8 * time.Second, KeepAlive: true})
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if !l.Valid() {
			t.Fatalf("lease returned invalid: %v", l.Err())
		}
		if got := fs.renewOffsets(start); !slices.Equal(got, []time.Duration{3 * time.Second}) {
			t.Fatalf("renews at %v, want one at the grant (3s)", got)
		}
		if want := start.Add(3*time.Second + 1800*time.Millisecond); !l.ValidUntil().Equal(want) {
			t.Errorf("ValidUntil = %v, want renew send + 1.8s = 4.8s", l.ValidUntil().Sub(start))
		}
		// The keep-alive counts TTL/2 from the confirming renew: 4s, 5s, 6s.
		time.Sleep(3500 * time.Millisecond)
		synctest.Wait()
		want := []time.Duration{3 * time.Second, 4 * time.Second, 5 * time.Second, 6 * time.Second}
		if got := fs.renewOffsets(start); !slices.Equal(got, want) {
			t.Fatalf("renews at %v, want %v", got, want)
		}
		if !l.Valid() {
			t.Fatalf("kept-alive lease invalid: %v", l.Err())
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatalf("Release: %v", err)
		}
	})
}

// Goal: when enough validity counted from the first send remains, the
// client keeps it (no extra renew), both for a slow try-lock and for a
// short wait; and a keep-alive renews TTL/2 after that first send, not
// TTL/2 after the reply. Method: fake clock; a try-lock whose handling is
// delayed 3s, and a wait of 4s on a held lock, both with TTL 10s.
func TestAcquireKeepsFirstSendValidityWhenAmple(t *testing.T) {
	t.Run("slow try-lock", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fs := newFakeServer()
			fs.setFault(func(path string, _ int) fault {
				if path == api.PathAcquire {
					return fault{delay: 3 * time.Second}
				}
				return fault{}
			})
			c := newInProcessClient(t, fs, Config{})
			start := time.Now()
			l, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: 10 * time.Second})
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			// The server granted at 3s, but the client cannot tell: it counts from 0.
			if want := start.Add(9 * time.Second); !l.ValidUntil().Equal(want) {
				t.Errorf("ValidUntil = %v, want first send + 9s", l.ValidUntil().Sub(start))
			}
			if got := fs.callCount(api.PathRenew); got != 0 {
				t.Errorf("%d renews, want none", got)
			}
			if at := waitLost(t, l, start); at != 9*time.Second {
				t.Errorf("presumed lost at %v, want 9s", at)
			}
		})
	})
	t.Run("short wait with keep-alive", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fs := newFakeServer()
			c := newInProcessClient(t, fs, Config{})
			l, start, err := queuedGrant(t, fs, c, "r", 4*time.Second,
				AcquireOptions{TTL: 10 * time.Second, Wait: 8 * time.Second, KeepAlive: true})
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			if want := start.Add(9 * time.Second); !l.ValidUntil().Equal(want) {
				t.Errorf("ValidUntil = %v, want first send + 9s", l.ValidUntil().Sub(start))
			}
			if got := fs.callCount(api.PathRenew); got != 0 {
				t.Errorf("%d renews at the grant, want none", got)
			}
			time.Sleep(7 * time.Second) // to 11s
			synctest.Wait()
			want := []time.Duration{5 * time.Second, 10 * time.Second}
			if got := fs.renewOffsets(start); !slices.Equal(got, want) {
				t.Fatalf("renews at %v, want %v", got, want)
			}
			if !l.Valid() {
				t.Fatalf("kept-alive lease invalid: %v", l.Err())
			}
			if err := l.Release(context.Background()); err != nil {
				t.Fatalf("Release: %v", err)
			}
		})
	})
}

// Goal: if the renew that should confirm a grant after a long wait fails,
// the acquire reports the lease lost instead of returning a dead lease;
// with validity from the first send still left, the lease is returned
// valid and the failure is only retried. Method: renews fail with
// not_holder or 503 after waits of 3s (TTL 2s) or 6s (TTL 10s).
func TestAcquireConfirmingRenewFails(t *testing.T) {
	tests := []struct {
		name      string
		ttl, hold time.Duration
		status    int
		code      api.Code
		wantErr   error // nil: a valid lease
	}{
		{"not_holder after long wait", 2 * time.Second, 3 * time.Second, 409, api.CodeNotHolder, ErrNotHolder},
		{"unavailable after long wait", 2 * time.Second, 3 * time.Second, 503, api.CodeUnavailable, ErrLeaseExpired},
		{"not_holder with validity left", 10 * time.Second, 6 * time.Second, 409, api.CodeNotHolder, ErrNotHolder},
		{"unavailable with validity left", 10 * time.Second, 6 * time.Second, 503, api.CodeUnavailable, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := newFakeServer()
				fs.setFault(func(path string, _ int) fault {
					if path == api.PathRenew {
						return fault{status: tt.status, code: tt.code}
					}
					return fault{}
				})
				c := newInProcessClient(t, fs, Config{MaxAttempts: 2})
				l, start, err := queuedGrant(t, fs, c, "r", tt.hold,
					AcquireOptions{TTL: tt.ttl, Wait: 8 * time.Second})
				if fs.callCount(api.PathRenew) == 0 {
					t.Fatal("no confirming renew")
				}
				if tt.wantErr != nil {
					if !errors.Is(err, tt.wantErr) || l != nil {
						t.Fatalf("Acquire = %v, %v; want no lease and %v", l, err, tt.wantErr)
					}
					return
				}
				if err != nil || !l.Valid() {
					t.Fatalf("Acquire = %v; want a valid lease", err)
				}
				if want := start.Add(9 * time.Second); !l.ValidUntil().Equal(want) {
					t.Errorf("ValidUntil = %v, want first send + 9s", l.ValidUntil().Sub(start))
				}
				<-l.Lost()
				var apiErr *APIError
				if !errors.Is(l.Err(), ErrLeaseExpired) || !errors.As(l.Err(), &apiErr) || apiErr.Status != 503 {
					t.Errorf("Err = %v, want ErrLeaseExpired carrying the renew's 503", l.Err())
				}
			})
		})
	}
}

// Goal: a lease confirmed after a long wait is still lost as usual: a
// not_holder renew from the keep-alive ends it. Method: TTL 2s granted at
// 3s and renewed at once; revoke at 3.2s; the next renew (4s) must report it.
func TestAcquireAfterLongWaitLossStillReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeServer()
		c := newInProcessClient(t, fs, Config{})
		l, start, err := queuedGrant(t, fs, c, "r", 3*time.Second,
			AcquireOptions{TTL: 2 * time.Second, Wait: 8 * time.Second, KeepAlive: true})
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if !l.Valid() {
			t.Fatalf("lease returned invalid: %v", l.Err())
		}
		time.Sleep(200 * time.Millisecond)
		fs.revoke("r", l.ID())
		if at := waitLost(t, l, start); at != 4*time.Second {
			t.Errorf("loss reported at %v, want 4s", at)
		}
		if !errors.Is(l.Err(), ErrNotHolder) {
			t.Errorf("Err = %v, want ErrNotHolder", l.Err())
		}
	})
}

// Goal: a grant whose expires_in is missing (validity unknown) is renewed
// before Acquire returns, and validity counts from that renew. Method: a
// proxy in front of the fake strips expires_in from acquire replies.
func TestAcquireUnknownValidityRenewsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeServer()
		strip := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != api.PathAcquire {
				fs.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			fs.ServeHTTP(rec, r)
			var resp api.AcquireResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
				t.Errorf("decode fake reply: %v", err)
			}
			resp.ExpiresInMs = 0
			writeJSON(w, rec.Code, resp)
		})
		c := newTestClient(t, Config{Endpoints: []string{"http://fake.invalid"}, HTTPClient: &http.Client{Transport: handlerTransport{strip}}})
		start := time.Now()
		time.Sleep(time.Second) // so renew offsets are not all zero
		l, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: 10 * time.Second})
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if got := fs.renewOffsets(start); !slices.Equal(got, []time.Duration{time.Second}) {
			t.Errorf("renews at %v, want one at 1s", got)
		}
		if want := start.Add(10 * time.Second); !l.Valid() || !l.ValidUntil().Equal(want) {
			t.Errorf("valid %v until %v, want valid until renew + 9s = 10s", l.Valid(), l.ValidUntil().Sub(start))
		}
		if l.Token() == 0 {
			t.Error("fencing token lost")
		}
	})
}
