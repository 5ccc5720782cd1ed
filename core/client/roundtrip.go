package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/lockstep/lockstep/core/api"
)

// maxReplyBytes bounds how much of a reply body is read.
const maxReplyBytes = 1 << 20

// request describes one HTTP exchange with a node.
type request struct {
	method string
	path   string
	query  url.Values // nil for none
	body   any        // JSON-encoded; nil for none
	// timeout bounds this attempt.
	timeout time.Duration
}

// roundTrip performs one attempt of req against endpoint and decodes a 2xx
// reply into out. Non-2xx replies come back as *APIError.
func (c *Client) roundTrip(ctx context.Context, endpoint string, req request, out any) error {
	ctx, cancel := context.WithTimeout(ctx, req.timeout)
	defer cancel()

	target := endpoint + req.path
	if len(req.query) > 0 {
		target += "?" + req.query.Encode()
	}
	var body io.Reader
	if req.body != nil {
		b, err := json.Marshal(req.body)
		if err != nil {
			return fmt.Errorf("encode %s body: %w", req.path, err)
		}
		body = bytes.NewReader(b)
	}
	httpReq, err := http.NewRequestWithContext(ctx, req.method, target, body)
	if err != nil {
		return fmt.Errorf("build %s %s: %w", req.method, target, err)
	}
	if body != nil {
		httpReq.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		httpReq.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(httpReq)
	if err != nil {
		return fmt.Errorf("%s %s: %w", req.method, target, err)
	}
	defer resp.Body.Close()
	if req.path != api.PathCluster { // a map fetch reads the version from the body
		c.routes.Notice(endpoint, resp.Header)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		return fmt.Errorf("read reply of %s %s: %w", req.method, target, err)
	}
	if resp.StatusCode/100 != 2 {
		ae := newAPIError(resp.StatusCode, data)
		if ae.speaksTLS {
			ae.Message = endpoint + ": " + ae.Message
		}
		return ae
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode reply of %s %s: %w", req.method, target, err)
	}
	return nil
}
