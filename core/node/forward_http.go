package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/lockstep/lockstep/core/lock"
)

// ForwardPath is where a member's member-port HTTP server accepts
// forwarded commands (never on the public API port).
const ForwardPath = "/internal/propose"

// maxForwardBody bounds a forwarded command (ids are at most 256 bytes each).
const maxForwardBody = 64 << 10

// The forward reply format, the same over every transport: 200 with the
// leader's encoded lock.Result, or a JSON forwardError whose code says what
// the follower may conclude.
const (
	// forwardNotLeader: refused before proposing; retry at the leader.
	forwardNotLeader = "not_leader"
	// forwardUnavailable: surely not applied; safe to retry.
	forwardUnavailable = "unavailable"
	// forwardOutcomeUnknown: proposed, outcome unknown.
	forwardOutcomeUnknown = "outcome_unknown"
	// forwardInvalid: the command can never apply.
	forwardInvalid  = "invalid_argument"
	forwardInternal = "internal"
)

type forwardError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// HTTPForwarder forwards commands to the leader's member port over HTTP.
type HTTPForwarder struct {
	Client *http.Client
}

// NewHTTPForwarder returns a forwarder whose requests travel over rt; its
// dialer must reach the member port (the Raft address) of a peer.
func NewHTTPForwarder(rt http.RoundTripper) *HTTPForwarder {
	return &HTTPForwarder{Client: &http.Client{Transport: rt}}
}

// Forward implements Forwarder.
func (f *HTTPForwarder) Forward(ctx context.Context, leader Peer, cmd []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+leader.RaftAddr+ForwardPath, bytes.NewReader(cmd))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := f.Client.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err) // never sent
		}
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxForwardBody))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return body, nil
	}
	return nil, decodeForwardError(resp.StatusCode, body)
}

// decodeForwardError maps a forward error reply back to the node error the
// leader had, so the follower classifies it as the leader would.
func decodeForwardError(status int, body []byte) error {
	var fe forwardError
	if json.Unmarshal(body, &fe) != nil || fe.Code == "" {
		return fmt.Errorf("forward: status %d: %.200s", status, bytes.TrimSpace(body))
	}
	switch fe.Code {
	case forwardNotLeader:
		return fmt.Errorf("%w: %s", ErrNotLeader, fe.Error)
	case forwardUnavailable:
		return fmt.Errorf("%w: leader says %s", ErrUnavailable, fe.Error)
	case forwardInvalid:
		return fmt.Errorf("%w: leader says %s", lock.ErrInvalid, fe.Error)
	case forwardOutcomeUnknown:
		return fmt.Errorf("%w: leader says %s", ErrIndeterminate, fe.Error)
	default:
		return fmt.Errorf("forward: leader says %s: %s", fe.Code, fe.Error)
	}
}

// encodeForwardError is the reply status and body for a ServeForward error.
func encodeForwardError(err error) (int, []byte) {
	fe := forwardError{Error: err.Error()}
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrNotLeader):
		fe.Code, status = forwardNotLeader, http.StatusMisdirectedRequest
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrShutdown):
		fe.Code, status = forwardUnavailable, http.StatusServiceUnavailable
	case errors.Is(err, lock.ErrCorrupt), errors.Is(err, lock.ErrInvalid):
		fe.Code, status = forwardInvalid, http.StatusBadRequest
	case errors.Is(err, ErrIndeterminate):
		fe.Code, status = forwardOutcomeUnknown, http.StatusGatewayTimeout
	default:
		fe.Code = forwardInternal
	}
	body, _ := json.Marshal(fe)
	return status, body
}

// WriteForwardError answers a forwarded command with err in the forward
// reply format, so the sender's Forwarder classifies it as this member did.
func WriteForwardError(w http.ResponseWriter, err error) {
	status, body := encodeForwardError(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// ForwardHandler serves ForwardPath and ReadIndexPath for the other
// members, on the member port.
func (n *Node) ForwardHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == ReadIndexPath {
			n.serveReadIndex(w, r)
			return
		}
		writeErr := func(err error) { WriteForwardError(w, err) }
		if r.Method != http.MethodPost || r.URL.Path != ForwardPath {
			writeErr(fmt.Errorf("%w: only POST %s is served here", lock.ErrInvalid, ForwardPath))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxForwardBody))
		if err != nil {
			writeErr(fmt.Errorf("%w: read body: %w", lock.ErrInvalid, err))
			return
		}
		out, err := n.ServeForward(r.Context(), body)
		if err != nil {
			writeErr(err)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(out)
	})
}
