package lockd

import (
	"fmt"

	"github.com/lockstep/lockstep/core/node"
)

// Validate reports options Start cannot run with, before anything opens:
// what the member is called and where it listens and keeps its data, the
// store kinds, and the service and HTTP settings. Zero values that have a
// default are valid.
func (o Options) Validate() error {
	switch {
	case o.ID == "" || o.RaftAddr == "" || o.HTTPAddr == "" || o.DataDir == "":
		return fmt.Errorf("%w: ID, RaftAddr, HTTPAddr and DataDir are required", node.ErrConfig)
	case o.Shards < 0 || o.LogCache < 0:
		return fmt.Errorf("%w: Shards and LogCache must not be negative", node.ErrConfig)
	}
	switch o.LogStore {
	case "", LogStoreWAL, LogStoreBolt:
	default:
		return fmt.Errorf("%w: unknown log store %q (want wal or bolt)", node.ErrConfig, o.LogStore)
	}
	switch o.WALMode {
	case "", WALPerGroup, WALShared: // shared with bolt: openSharedWAL refuses it
	default:
		return fmt.Errorf("%w: unknown WAL mode %q (want per-group or shared)", node.ErrConfig, o.WALMode)
	}
	if err := o.Service.WithDefaults().Validate(); err != nil {
		return fmt.Errorf("service config: %w", err)
	}
	if err := o.Server.Validate(); err != nil {
		return fmt.Errorf("http config: %w", err)
	}
	return nil
}
