package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// TargetNames lists what OpenTarget can open.
var TargetNames = []string{"lockstep", "bare", "etcd", "etcd1", "redis", "redis-aof"}

// TargetOptions carries what the individual targets need.
type TargetOptions struct {
	Lockstep    LockstepOptions
	RedisBinary string
	// WorkDir is scratch space; each target gets WorkDir/<name> for data
	// and logs.
	WorkDir string
}

// EtcdOptions configures the embedded etcd cluster (needs -tags peers).
type EtcdOptions struct {
	// Members is 1 or 3; all run in this process, on loopback, fsync on.
	Members int
	// Dir holds each member's data dir and log; the caller owns it.
	Dir string
}

// OpenTarget starts (or connects to) the named target.
func OpenTarget(ctx context.Context, name string, opts TargetOptions) (Target, error) {
	dir := filepath.Join(opts.WorkDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("target dir: %w", err)
	}
	switch name {
	case "bare":
		return NewBareTarget()
	case "lockstep":
		lo := opts.Lockstep
		lo.LogDir = dir
		return NewLockstepTarget(ctx, lo)
	case "etcd":
		return NewEtcdTarget(ctx, EtcdOptions{Members: 3, Dir: dir})
	case "etcd1":
		return NewEtcdTarget(ctx, EtcdOptions{Members: 1, Dir: dir})
	case "redis", "redis-aof":
		return NewRedisTarget(ctx, RedisOptions{Binary: opts.RedisBinary, AOF: name == "redis-aof", Dir: dir})
	default:
		return nil, fmt.Errorf("unknown target %q (want one of %v)", name, TargetNames)
	}
}
