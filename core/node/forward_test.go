package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/lockstep/lockstep/core/lock"
)

// TestForwardReplyFormat: goal — the one forward reply format carries the
// leader's error class back to the follower unchanged, whatever transport
// carries it, so the follower's answer is as truthful as the leader's.
// Method: encode every class on the leader side, decode on the follower
// side, and check the error it turns into; plus the transport's own errors.
func TestForwardReplyFormat(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"not leader", ErrNotLeader, ErrNotLeader},
		{"unavailable", fmt.Errorf("%w: enqueue timeout", ErrUnavailable), ErrUnavailable},
		{"shutting down", ErrShutdown, ErrUnavailable},
		{"corrupt command", fmt.Errorf("%w: truncated", lock.ErrCorrupt), lock.ErrInvalid},
		{"invalid command", lock.ErrInvalid, lock.ErrInvalid},
		{"outcome unknown", fmt.Errorf("%w: leadership lost", ErrIndeterminate), ErrIndeterminate},
	} {
		status, body := encodeForwardError(tc.err)
		got := decodeForwardError(status, body)
		if !errors.Is(got, tc.want) {
			t.Errorf("%s: leader %v -> follower %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
	// An internal error and a reply that is no forward error at all are
	// neither definite class: the follower reports the outcome unknown.
	for _, got := range []error{decodeForwardError(encodeForwardError(errors.New("boom"))), decodeForwardError(502, []byte("<html>bad gateway"))} {
		if errors.Is(got, ErrUnavailable) || errors.Is(got, ErrNotLeader) {
			t.Errorf("an unclassified reply decoded as definite: %v", got)
		}
	}
}

// TestForwardTransportErrors: goal — a forward that surely never left is
// definite (unavailable), one that may have arrived is not. Method: an
// HTTPForwarder over transports failing to dial, and failing after sending.
func TestForwardTransportErrors(t *testing.T) {
	dialFails := roundTripFunc(func() error { return &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("refused")} })
	sentFails := roundTripFunc(func() error { return errors.New("connection reset after write") })
	if _, err := NewHTTPForwarder(dialFails).Forward(context.Background(), Peer{ID: "n2", RaftAddr: "n2:1"}, []byte{1}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("dial failure: %v, want ErrUnavailable", err)
	}
	_, err := NewHTTPForwarder(sentFails).Forward(context.Background(), Peer{ID: "n2", RaftAddr: "n2:1"}, []byte{1})
	if err == nil || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotLeader) {
		t.Errorf("failure after sending: %v, want an error that is neither definite class", err)
	}
}

// roundTripFunc is an http.RoundTripper failing with the error fn returns.
type roundTripFunc func() error

func (f roundTripFunc) RoundTrip(*http.Request) (*http.Response, error) { return nil, f() }
