package lockd

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/meta"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/shard"
)

// bootstrapRetry paces the bootstrap proposal while the metadata group
// has no leader.
const bootstrapRetry = 200 * time.Millisecond

// bootstrapToken is the first admin token for secret (every namespace,
// every right); nil without a secret.
func bootstrapToken(secret string) (*acl.Token, error) {
	if secret == "" {
		return nil, nil
	}
	t, err := acl.NewToken(secret, "bootstrap", []string{acl.AllNamespaces},
		[]acl.Right{acl.RightAdmin, acl.RightAcquire, acl.RightReleaseAny, acl.RightRead})
	if err != nil {
		return nil, fmt.Errorf("%w: --acl-bootstrap-token: %w", node.ErrConfig, err)
	}
	return &t, nil
}

// bootstrapACL turns ACLs on cluster-wide with t as the first admin
// token, through the metadata group: a no-op where that token is already
// there, refused (and logged) where another one bootstrapped the cluster.
// It retries in the background until done or stop.
func bootstrapACL(h *shard.Host, t acl.Token, stop <-chan struct{}, logger *slog.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		for {
			err := h.Meta().Propose(ctx, meta.Command{Op: meta.OpACLBootstrap, ACLCommand: meta.ACLCommand{Token: &t}})
			switch {
			case err == nil:
				logger.Info("ACLs are on", "node", h.ID(), "bootstrap_token", t.ID)
				return
			case meta.Refused(err):
				logger.Warn("ACL bootstrap refused", "node", h.ID(), "err", err)
				return
			case ctx.Err() != nil:
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(bootstrapRetry):
			}
		}
	}()
}
