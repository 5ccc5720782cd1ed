package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/lockstep/lockstep/core/lock"
)

// ForwardPath is where a member's HTTP server accepts forwarded commands.
const ForwardPath = "/internal/propose"

// maxForwardBody bounds a forwarded command (ids are at most 256 bytes each).
const maxForwardBody = 64 << 10

// HTTPForwarder forwards commands to the leader's HTTP listener.
type HTTPForwarder struct {
	Client *http.Client
}

// NewHTTPForwarder returns a forwarder with pooled keep-alive connections.
func NewHTTPForwarder() *HTTPForwarder {
	tr := &http.Transport{
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
	}
	return &HTTPForwarder{Client: &http.Client{Transport: tr}}
}

// Forward implements Forwarder.
func (f *HTTPForwarder) Forward(ctx context.Context, leader Peer, cmd []byte) ([]byte, error) {
	if leader.HTTPAddr == "" {
		return nil, fmt.Errorf("%w: leader %s has no known HTTP address", ErrUnavailable, leader.ID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+leader.HTTPAddr+ForwardPath, bytes.NewReader(cmd))
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
	switch resp.StatusCode {
	case http.StatusOK:
		return body, nil
	case http.StatusMisdirectedRequest:
		return nil, ErrNotLeader
	case http.StatusServiceUnavailable:
		return nil, fmt.Errorf("%w: leader says %s", ErrUnavailable, bytes.TrimSpace(body))
	default:
		return nil, fmt.Errorf("forward: status %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
}

// ForwardHandler serves ForwardPath for the other members.
func (n *Node) ForwardHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxForwardBody))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, err := n.ServeForward(r.Context(), body)
		switch {
		case err == nil:
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(out)
		case errors.Is(err, ErrNotLeader):
			http.Error(w, err.Error(), http.StatusMisdirectedRequest)
		case errors.Is(err, ErrUnavailable):
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		case errors.Is(err, lock.ErrCorrupt):
			http.Error(w, err.Error(), http.StatusBadRequest)
		default:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
}
