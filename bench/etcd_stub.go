//go:build !peers

package bench

import (
	"context"
	"errors"
)

// NewEtcdTarget is unavailable without the peers build tag, which keeps
// etcd out of the default build.
func NewEtcdTarget(context.Context, EtcdOptions) (Target, error) {
	return nil, errors.New("etcd targets need a build with -tags peers")
}
