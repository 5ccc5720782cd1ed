package node

import (
	"context"
	"log/slog"

	"github.com/lockstep/lockstep/core/lock"
)

// logEvents writes a debug line per grant and expiry an entry applied. Only
// the leader writes them, so a cluster logs each once, not once per
// replica; it reads the role from the observed leader, not from raft, which
// may apply entries before New has stored it.
func (n *Node) logEvents(events []lock.Event) {
	ctx := context.Background()
	if !n.cfg.Logger.Enabled(ctx, slog.LevelDebug) || !n.contacts.leading() {
		return
	}
	for _, ev := range events {
		var msg string
		switch ev.Kind {
		case lock.EventGrant:
			msg = "lock granted"
		case lock.EventExpire:
			msg = "lease expired"
		default:
			continue
		}
		n.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, msg,
			slog.String("node", n.cfg.ID), slog.String("shard", n.cfg.Group),
			slog.String("resource", ev.Resource), slog.String("client_id", ev.Lease.ClientID),
			slog.String("lease_id", ev.Lease.ID.String()), slog.Uint64("fencing_token", ev.Lease.Token),
			slog.Uint64("index", ev.Index), slog.Bool("queued", ev.Queued))
	}
}
