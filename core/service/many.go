package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/placement"
)

// releaseTimeout bounds releasing what a canonical request took before a
// later shard refused it.
const releaseTimeout = 2 * time.Second

// shardPart is the resources of an acquire_many that one shard serves, in
// request order.
type shardPart struct {
	shard     placement.Shard
	node      *node.Node
	resources []string
}

// AcquireMany takes several resources at once or none (POST
// /lock/acquire_many): atomic in one entry when every resource is on one
// shard, shard by shard with "order":"canonical", refused as cross_shard
// otherwise. A wait that ends ungranted is an answer, not an error.
func (s *Service) AcquireMany(ctx context.Context, in api.AcquireManyRequest) (api.AcquireManyResponse, error) {
	if err := s.authorize(ctx, acl.RightAcquire, in.Resources...); err != nil {
		return api.AcquireManyResponse{}, err
	}
	cmd, err := manyCommand(&in)
	if err != nil {
		return api.AcquireManyResponse{}, err
	}
	parts, err := s.split(in.Resources)
	if err != nil {
		return api.AcquireManyResponse{}, err
	}
	if len(parts) > 1 && in.Order != api.OrderCanonical {
		shards := make([]placement.Shard, len(parts))
		for i, p := range parts {
			shards[i] = p.shard
		}
		return api.AcquireManyResponse{}, fmt.Errorf("%w: %d resources on shards %v; use hash tags ({...}) to place them together, or \"order\":\"canonical\"",
			errCrossShard, len(in.Resources), shards)
	}
	for _, p := range parts {
		part := cmd
		part.Resources = p.resources
		if err := p.node.CheckAcquireMany(part); err != nil {
			return api.AcquireManyResponse{}, err
		}
	}
	if err := s.admitAcquire(&cmd, in.Resources...); err != nil {
		return api.AcquireManyResponse{}, err
	}
	ctx, cancel := s.deadline(ctx, time.Duration(in.WaitMs)*time.Millisecond)
	defer cancel()
	if len(parts) == 1 {
		res, err := parts[0].node.AcquireMany(ctx, cmd)
		if errors.Is(err, node.ErrQuotaExceeded) {
			// Held or queued limits are stamped only for one namespace.
			err = quotaExceeded(err, res.Blocked, lock.Namespace(in.Resources[0]), in.ClientID, cmd.Quota)
		}
		if err != nil {
			return api.AcquireManyResponse{}, err
		}
		return manyResponse(api.KindAtomic, in.Resources, res), nil
	}
	return s.acquireCanonical(ctx, cmd, parts)
}

// manyCommand checks the request's own fields and builds its command.
func manyCommand(in *api.AcquireManyRequest) (lock.Command, error) {
	mode, err := lock.ParseMode(string(in.Mode))
	if err != nil {
		return lock.Command{}, err
	}
	policy, err := lock.ParsePolicy(string(in.Policy))
	if err != nil {
		return lock.Command{}, err
	}
	switch {
	case in.TTLMs <= 0:
		return lock.Command{}, fmt.Errorf("%w: ttl is required and must be > 0 ms", lock.ErrInvalid)
	case in.WaitMs < 0:
		return lock.Command{}, fmt.Errorf("%w: wait must be >= 0 ms", lock.ErrInvalid)
	case in.Order != "" && in.Order != api.OrderCanonical:
		return lock.Command{}, fmt.Errorf("%w: unknown order %q (want canonical or none)", lock.ErrInvalid, in.Order)
	case len(in.Resources) == 0 || len(in.Resources) > api.MaxManyResources:
		return lock.Command{}, fmt.Errorf("%w: %d resources, want 1..%d", lock.ErrInvalid, len(in.Resources), api.MaxManyResources)
	}
	if err := checkGrace(in.GraceMs, in.TTLMs); err != nil {
		return lock.Command{}, err
	}
	for i, r := range in.Resources {
		if r == "" {
			return lock.Command{}, fmt.Errorf("%w: resources[%d] is empty", lock.ErrInvalid, i)
		}
		if slices.Contains(in.Resources[:i], r) {
			return lock.Command{}, fmt.Errorf("%w: resource %q named twice", lock.ErrInvalid, r)
		}
	}
	return lock.Command{
		Resources: in.Resources, ClientID: in.ClientID, RequestID: in.RequestID,
		Mode: mode, Policy: policy, TTLMs: in.TTLMs, WaitMs: in.WaitMs, GraceMs: in.GraceMs,
	}, nil
}

// split groups resources by shard, shards in ascending order (the
// canonical order), each shard's resources in request order.
func (s *Service) split(resources []string) ([]shardPart, error) {
	var parts []shardPart
	for _, r := range resources {
		n, sh, err := s.host.For(r)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(parts, func(p shardPart) bool { return p.shard == sh })
		if i < 0 {
			parts = append(parts, shardPart{shard: sh, node: n})
			i = len(parts) - 1
		}
		parts[i].resources = append(parts[i].resources, r)
	}
	slices.SortFunc(parts, func(a, b shardPart) int { return cmp.Compare(a.shard, b.shard) })
	return parts, nil
}

// acquireCanonical takes parts one shard after another, each atomically
// with what is left of the wait. Every client takes shards in the same
// order, so two canonical requests cannot wait for each other in a cycle.
// When a shard refuses (or fails), what the earlier shards granted is
// released and the refusal (or error) is the answer.
func (s *Service) acquireCanonical(ctx context.Context, cmd lock.Command, parts []shardPart) (api.AcquireManyResponse, error) {
	start := time.Now()
	var taken []shardPart
	var granted []lock.Result
	for _, p := range parts {
		part := cmd
		part.Resources = p.resources
		if cmd.RequestID != "" {
			// One request id per shard, so a retry of the whole request
			// finds each shard's part under its own id.
			part.RequestID = fmt.Sprintf("%s#%d", cmd.RequestID, p.shard)
		}
		if cmd.WaitMs > 0 {
			part.WaitMs = max(1, cmd.WaitMs-time.Since(start).Milliseconds())
		}
		res, err := p.node.AcquireMany(ctx, part)
		if errors.Is(err, node.ErrQuotaExceeded) {
			err = quotaExceeded(err, res.Blocked, lock.Namespace(part.Resources[0]), cmd.ClientID, cmd.Quota)
		}
		if err != nil {
			s.releaseTaken(ctx, taken, granted)
			return api.AcquireManyResponse{}, err
		}
		if !res.Granted {
			s.releaseTaken(ctx, taken, granted)
			return manyResponse(api.KindCanonical, p.resources, res), nil
		}
		taken = append(taken, p)
		granted = append(granted, res)
	}
	// Each shard's expires_in counts from that shard's grant: a lower bound
	// from the client's first send, as for a single acquire.
	byResource := make(map[string]api.ManyLease, len(cmd.Resources))
	for i, p := range taken {
		for j, r := range p.resources {
			byResource[r] = manyLease(r, granted[i].Leases[j], granted[i].LogTime)
		}
	}
	out := api.AcquireManyResponse{Granted: true, Kind: api.KindCanonical, LogTimeMs: ms(granted[len(granted)-1].LogTime)}
	for _, r := range cmd.Resources {
		out.Leases = append(out.Leases, byResource[r])
	}
	return out, nil
}

// releaseTaken releases the leases the earlier shards of a canonical
// request granted. A release that fails leaves its lease to expire by TTL.
func (s *Service) releaseTaken(ctx context.Context, taken []shardPart, granted []lock.Result) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	for i, p := range taken {
		for j, r := range p.resources {
			id := granted[i].Leases[j].ID
			if _, err := p.node.Release(rctx, r, id); err != nil {
				s.cfg.Logger.Warn("acquire_many: releasing an earlier shard's lease failed; it expires by its TTL",
					"resource", r, "lease_id", id, "err", err)
			}
		}
	}
}

// manyResponse is the reply for one shard's answer to resources.
func manyResponse(kind api.ManyKind, resources []string, res lock.Result) api.AcquireManyResponse {
	out := api.AcquireManyResponse{Kind: kind, Leases: []api.ManyLease{}, LogTimeMs: ms(res.LogTime)}
	if !res.Granted {
		out.Blocked, out.QueuePosition = res.Blocked, res.Position
		return out
	}
	out.Granted = true
	for i, l := range res.Leases {
		out.Leases = append(out.Leases, manyLease(resources[i], l, res.LogTime))
	}
	return out
}

func manyLease(resource string, l lock.Lease, logTime int64) api.ManyLease {
	return api.ManyLease{Resource: resource, LeaseID: l.ID.String(), FencingToken: l.Token, ExpiresInMs: expiresIn(l.ExpiresAt, logTime)}
}
