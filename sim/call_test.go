package sim

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func echo(_ context.Context, _ string, req []byte) ([]byte, error) { return req, nil }

// Goal: each failure mode of Call yields its documented error after the
// documented wait. Method: a table of fault setups, each in its own bubble,
// checking the error, its class and the virtual time it took.
func TestCallErrors(t *testing.T) {
	const timeout = 2 * time.Second
	tests := []struct {
		name    string
		setup   func(n *Network)
		ctxWait time.Duration // 0: no context deadline
		want    []error
		took    time.Duration
	}{
		{"ok", func(*Network) {}, 0, nil, 2 * time.Millisecond},
		{"partition", func(n *Network) { n.Partition([]string{"cli"}, []string{"srv"}) }, 0, []error{ErrUnreachable}, timeout},
		{"one-way cut of the response", func(n *Network) { n.Cut("srv", "cli") }, 0, []error{ErrUnreachable}, timeout},
		{"no handler", func(n *Network) { n.Handle("srv", nil) }, 0, []error{ErrUnreachable}, timeout},
		{"random loss", func(n *Network) { n.SetLink("cli", "srv", Link{DropRate: 1}) }, 0, []error{ErrTimeout}, timeout},
		{"remote error", func(n *Network) {
			n.Handle("srv", func(context.Context, string, []byte) ([]byte, error) { return nil, errors.New("boom") })
		}, 0, []error{ErrRemote}, 2 * time.Millisecond},
		{"context deadline", func(n *Network) { n.Isolate("srv") }, 300 * time.Millisecond,
			[]error{ErrUnreachable, context.DeadlineExceeded}, 300 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := NewNetwork(Options{Link: Link{LatencyBase: time.Millisecond}, CallTimeout: timeout})
				defer n.Close()
				n.Handle("srv", echo)
				tc.setup(n)
				ctx := context.Background()
				if tc.ctxWait > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctxWait)
					defer cancel()
				}
				start := time.Now()
				resp, err := n.Call(ctx, "cli", "srv", []byte("hi"))
				if took := time.Since(start); took != tc.took {
					t.Errorf("took %v, want %v", took, tc.took)
				}
				if tc.want == nil {
					if err != nil || string(resp) != "hi" {
						t.Fatalf("got %q, %v; want echo", resp, err)
					}
					return
				}
				for _, w := range tc.want {
					if !errors.Is(err, w) {
						t.Errorf("error %v is not %v", err, w)
					}
				}
			})
		})
	}
}

// Goal: a message in flight when a partition appears is lost. Method: 100 ms
// latency, partition after 50 ms, expect ErrUnreachable and a handler that
// never ran.
func TestCallLostInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Options{Link: Link{LatencyBase: 100 * time.Millisecond}, CallTimeout: time.Second})
		defer n.Close()
		var ran atomic.Bool
		n.Handle("srv", func(context.Context, string, []byte) ([]byte, error) { ran.Store(true); return nil, nil })
		go func() {
			time.Sleep(50 * time.Millisecond)
			n.Isolate("srv")
		}()
		_, err := n.Call(context.Background(), "cli", "srv", nil)
		if !errors.Is(err, ErrUnreachable) {
			t.Fatalf("error %v, want ErrUnreachable", err)
		}
		if ran.Load() {
			t.Fatal("handler ran although the request was lost")
		}
	})
}

// Goal: pausing the receiver holds a call instead of dropping it. Method:
// pause srv, call, check the request is held, resume after 1 s and expect
// the reply at 1 s plus the round trip.
func TestCallHeldWhilePaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Options{Link: Link{LatencyBase: time.Millisecond}, CallTimeout: 5 * time.Second})
		defer n.Close()
		n.Handle("srv", echo)
		n.Pause("srv")
		go func() {
			time.Sleep(time.Second)
			if held := n.Stats().Held; held != 1 {
				t.Errorf("%d copies held during the pause, want 1", held)
			}
			n.Resume("srv")
		}()
		start := time.Now()
		resp, err := n.Call(context.Background(), "cli", "srv", []byte("late"))
		if err != nil || string(resp) != "late" {
			t.Fatalf("got %q, %v", resp, err)
		}
		if took, want := time.Since(start), time.Second+time.Millisecond; took != want {
			t.Fatalf("reply after %v, want %v", took, want)
		}
	})
}

// Goal: duplication runs the handler twice but the caller sees one reply.
// Method: DupRate 1 and a counting handler.
func TestCallDuplicated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Options{Link: Link{LatencyBase: time.Millisecond, DupRate: 1}})
		defer n.Close()
		var calls atomic.Int32
		n.Handle("srv", func(_ context.Context, _ string, req []byte) ([]byte, error) {
			calls.Add(1)
			return req, nil
		})
		if _, err := n.Call(context.Background(), "cli", "srv", []byte("x")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := calls.Load(); got != 2 {
			t.Fatalf("handler ran %d times, want 2", got)
		}
		if s := n.Stats(); s.Duplicated != 1 {
			t.Fatalf("stats %+v, want one duplicate", s)
		}
	})
}

// Goal: the handler cannot alias the caller's buffers. Method: a handler
// that scribbles on its request; the caller's slice must be unchanged.
func TestCallCopiesBuffers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Options{})
		defer n.Close()
		n.Handle("srv", func(_ context.Context, _ string, req []byte) ([]byte, error) {
			req[0] = 'X'
			return req, nil
		})
		req := []byte("abc")
		resp, err := n.Call(context.Background(), "cli", "srv", req)
		if err != nil {
			t.Fatal(err)
		}
		if string(req) != "abc" || string(resp) != "Xbc" {
			t.Fatalf("req %q resp %q", req, resp)
		}
	})
}

// Goal: Close fails pending calls with ErrClosed and stops every message
// goroutine (synctest would report a leak). Method: close while a call waits
// on a paused node.
func TestCallNetworkClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Options{})
		n.Handle("srv", echo)
		n.Pause("srv")
		go func() {
			time.Sleep(time.Second)
			n.Close()
		}()
		if _, err := n.Call(context.Background(), "cli", "srv", nil); !errors.Is(err, ErrClosed) {
			t.Fatalf("error %v, want ErrClosed", err)
		}
	})
}

// Goal: a Call error says whether the handler saw the request, which is
// what makes a retry safe. Method: a partition before sending (never
// delivered) against a cut of the response only (delivered, effect unknown).
func TestCallSaysWhetherDelivered(t *testing.T) {
	for _, tc := range []struct {
		name          string
		setup         func(n *Network)
		notDelivered  bool
		handlerCalled bool
	}{
		{"request partitioned", func(n *Network) { n.Partition([]string{"cli"}, []string{"srv"}) }, true, false},
		{"response cut", func(n *Network) { n.Cut("srv", "cli") }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := NewNetwork(Options{Link: Link{LatencyBase: time.Millisecond}, CallTimeout: time.Second})
				defer n.Close()
				var called atomic.Bool
				n.Handle("srv", func(ctx context.Context, from string, req []byte) ([]byte, error) {
					called.Store(true)
					return req, nil
				})
				tc.setup(n)
				_, err := n.Call(context.Background(), "cli", "srv", []byte("hi"))
				if err == nil || errors.Is(err, ErrNotDelivered) != tc.notDelivered || called.Load() != tc.handlerCalled {
					t.Fatalf("err %v (not delivered: %v), handler called %v; want not delivered %v, called %v",
						err, errors.Is(err, ErrNotDelivered), called.Load(), tc.notDelivered, tc.handlerCalled)
				}
			})
		})
	}
}
