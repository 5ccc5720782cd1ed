package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/lockstep/lockstep/core/lock"
)

// ReadIndexPath is where a member's member port answers read-index
// queries for a group, next to ForwardPath (never on the public API port).
// The reply is a JSON ReadIndex, or an error in the forward reply format.
const ReadIndexPath = "/internal/read-index"

var _ ReadIndexer = (*HTTPForwarder)(nil)

// ReadIndex implements ReadIndexer: GET ReadIndexPath on leader's member
// port. A query changes nothing, so every failure is only unavailable.
func (f *HTTPForwarder) ReadIndex(ctx context.Context, leader Peer) (ReadIndex, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+leader.RaftAddr+ReadIndexPath, nil)
	if err != nil {
		return ReadIndex{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	resp, err := f.Client.Do(req)
	if err != nil {
		return ReadIndex{}, fmt.Errorf("%w: ask %s: %w", ErrUnavailable, leader.ID, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxForwardBody))
	if err != nil {
		return ReadIndex{}, fmt.Errorf("%w: read %s's reply: %w", ErrUnavailable, leader.ID, err)
	}
	if resp.StatusCode != http.StatusOK {
		return ReadIndex{}, decodeForwardError(resp.StatusCode, body)
	}
	var ri ReadIndex
	if err := json.Unmarshal(body, &ri); err != nil {
		return ReadIndex{}, fmt.Errorf("%w: %s's reply: %w", ErrUnavailable, leader.ID, err)
	}
	return ri, nil
}

// serveReadIndex answers GET ReadIndexPath with ServeReadIndex.
func (n *Node) serveReadIndex(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		WriteForwardError(w, fmt.Errorf("%w: only GET %s is served here", lock.ErrInvalid, ReadIndexPath))
		return
	}
	ri, err := n.ServeReadIndex()
	if err != nil {
		WriteForwardError(w, err)
		return
	}
	b, _ := json.Marshal(ri)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
