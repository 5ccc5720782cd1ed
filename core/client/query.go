package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/lockstep/lockstep/core/api"
)

// Status returns the holders and queue of resource.
func (c *Client) Status(ctx context.Context, resource string) (*api.StatusResponse, error) {
	if resource == "" {
		return nil, errors.New("lockstep: status: empty resource")
	}
	req := request{
		method:  http.MethodGet,
		path:    api.PathStatus,
		query:   url.Values{"resource": {resource}},
		timeout: c.attemptTimeout,
	}
	out, err := call[api.StatusResponse](ctx, c, "status", resource, req)
	if err != nil {
		return nil, fmt.Errorf("lockstep: status %q: %w", resource, err)
	}
	return &out, nil
}

// Validate reports whether token is the fencing token of a current holder
// of resource, read through the log (GET /lock/validate): a downstream
// service's check before it accepts a write carrying token.
func (c *Client) Validate(ctx context.Context, resource string, token uint64) (bool, error) {
	if resource == "" {
		return false, errors.New("lockstep: validate: empty resource")
	}
	if token == 0 {
		return false, errors.New("lockstep: validate: token 0 is never granted")
	}
	req := request{
		method:  http.MethodGet,
		path:    api.PathValidate,
		query:   url.Values{"resource": {resource}, "token": {strconv.FormatUint(token, 10)}},
		timeout: c.attemptTimeout,
	}
	out, err := call[api.ValidateResponse](ctx, c, "validate", resource, req)
	if err != nil {
		return false, fmt.Errorf("lockstep: validate %q: %w", resource, err)
	}
	return out.Valid, nil
}

// Cluster returns the cluster membership and current leader.
func (c *Client) Cluster(ctx context.Context) (*api.ClusterResponse, error) {
	req := request{method: http.MethodGet, path: api.PathCluster, timeout: c.attemptTimeout}
	out, err := call[api.ClusterResponse](ctx, c, "cluster", "", req)
	if err != nil {
		return nil, fmt.Errorf("lockstep: cluster: %w", err)
	}
	return &out, nil
}

// fetchView asks endpoint for its own view of the shard map (local=true:
// it then never asks its leader), the shard leaders qualified with
// endpoint's scheme, since the client routes by base URLs.
func (c *Client) fetchView(ctx context.Context, endpoint string) (api.ClusterResponse, error) {
	var view api.ClusterResponse
	req := request{method: http.MethodGet, path: api.PathCluster, query: url.Values{"local": {"true"}}, timeout: c.attemptTimeout}
	if err := c.roundTrip(ctx, endpoint, req, &view); err != nil {
		return view, err
	}
	scheme, _, _ := strings.Cut(endpoint, "://")
	for i, sh := range view.Shards {
		if sh.LeaderHTTP != "" {
			view.Shards[i].LeaderHTTP = scheme + "://" + sh.LeaderHTTP
		}
	}
	return view, nil
}
