//go:build peers

package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

const (
	etcdReadyTimeout = 60 * time.Second
	etcdDialTimeout  = 5 * time.Second
	etcdLockPrefix   = "/lockbench/"
)

type etcdTarget struct {
	name      string
	members   []*embed.Etcd
	endpoints []string
}

var _ Target = (*etcdTarget)(nil)

// NewEtcdTarget starts an embedded etcd cluster and waits until every
// member is ready to serve.
func NewEtcdTarget(ctx context.Context, opts EtcdOptions) (Target, error) {
	if opts.Members != 1 && opts.Members != 3 {
		return nil, fmt.Errorf("etcd: members must be 1 or 3, got %d", opts.Members)
	}
	cfgs, endpoints, err := etcdConfigs(opts)
	if err != nil {
		return nil, err
	}
	name := "etcd"
	if opts.Members == 1 {
		name = "etcd1"
	}
	t := &etcdTarget{name: name, endpoints: endpoints}
	for _, cfg := range cfgs {
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			_ = t.Close()
			return nil, fmt.Errorf("etcd: start %s: %w", cfg.Name, err)
		}
		t.members = append(t.members, e)
	}
	ctx, cancel := context.WithTimeout(ctx, etcdReadyTimeout)
	defer cancel()
	for _, e := range t.members {
		select {
		case <-e.Server.ReadyNotify():
		case err := <-e.Err():
			_ = t.Close()
			return nil, fmt.Errorf("etcd: member failed: %w", err)
		case <-ctx.Done():
			_ = t.Close()
			return nil, fmt.Errorf("etcd: not ready: %w", ctx.Err())
		}
	}
	return t, nil
}

// etcdConfigs builds member configs on free loopback ports. Fsync stays on
// (the embed default) so etcd pays for durability as lockstep does.
func etcdConfigs(opts EtcdOptions) ([]*embed.Config, []string, error) {
	type ports struct{ peer, client string }
	ps := make([]ports, opts.Members)
	var initial []string
	for i := range ps {
		peer, err := freeLoopbackPort()
		if err != nil {
			return nil, nil, err
		}
		client, err := freeLoopbackPort()
		if err != nil {
			return nil, nil, err
		}
		ps[i] = ports{peer: fmt.Sprintf("http://127.0.0.1:%d", peer), client: fmt.Sprintf("http://127.0.0.1:%d", client)}
		initial = append(initial, fmt.Sprintf("m%d=%s", i, ps[i].peer))
	}
	var cfgs []*embed.Config
	var endpoints []string
	for i, p := range ps {
		peerURL, err := url.Parse(p.peer)
		if err != nil {
			return nil, nil, err
		}
		clientURL, err := url.Parse(p.client)
		if err != nil {
			return nil, nil, err
		}
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = filepath.Join(opts.Dir, cfg.Name)
		cfg.ListenPeerUrls = []url.URL{*peerURL}
		cfg.AdvertisePeerUrls = []url.URL{*peerURL}
		cfg.ListenClientUrls = []url.URL{*clientURL}
		cfg.AdvertiseClientUrls = []url.URL{*clientURL}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "lockbench"
		cfg.LogLevel = "warn"
		cfg.LogOutputs = []string{filepath.Join(opts.Dir, cfg.Name+".log")}
		cfgs = append(cfgs, cfg)
		endpoints = append(endpoints, p.client)
	}
	return cfgs, endpoints, nil
}

func (t *etcdTarget) Name() string { return t.name }

// Traits: the mutex key's create revision is a usable fencing token and
// waiters queue by revision; there is no shared mode and no policy switch.
func (t *etcdTarget) Traits() Traits { return Traits{Fencing: true, Queue: true} }

// NewLocker opens a client with its own gRPC connection and one session
// whose lease TTL is the workload's TTL rounded up to whole seconds (etcd's
// lease granularity).
func (t *etcdTarget) NewLocker(ctx context.Context, cfg ClientConfig) (Locker, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   t.endpoints,
		DialTimeout: etcdDialTimeout,
		Logger:      zap.NewNop(),
		Context:     context.WithoutCancel(ctx),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	ttlSec := max(int(math.Ceil(cfg.TTL.Seconds())), 1)
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(ttlSec))
	if err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("etcd session: %w", err)
	}
	return &etcdLocker{cli: cli, sess: sess, held: make(map[string]*concurrency.Mutex)}, nil
}

// Close stops every member.
func (t *etcdTarget) Close() error {
	for _, e := range t.members {
		e.Close()
	}
	return nil
}

// etcdLocker is the stock concurrency.Mutex recipe on one session.
type etcdLocker struct {
	cli  *clientv3.Client
	sess *concurrency.Session

	mu   sync.Mutex
	held map[string]*concurrency.Mutex // by lease (the mutex's own key)
}

var _ Locker = (*etcdLocker)(nil)

// Acquire implements Locker: Lock with the wait as deadline, or TryLock
// for wait 0. Shared requests are taken exclusively.
func (l *etcdLocker) Acquire(ctx context.Context, req AcquireRequest) (Grant, error) {
	m := concurrency.NewMutex(l.sess, etcdLockPrefix+req.Key)
	if req.Wait == 0 {
		if err := m.TryLock(ctx); err != nil {
			if errors.Is(err, concurrency.ErrLocked) {
				return Grant{Key: req.Key}, nil
			}
			return Grant{}, fmt.Errorf("etcd trylock %s: %w", req.Key, classifyEtcd(ctx, err))
		}
	} else {
		lctx, cancel := context.WithTimeout(ctx, req.Wait)
		err := m.Lock(lctx)
		waitedOut := expired(lctx) && !expired(ctx)
		cancel()
		if err != nil {
			if waitedOut {
				return Grant{Key: req.Key}, nil // Lock already withdrew our key
			}
			return Grant{}, fmt.Errorf("etcd lock %s: %w", req.Key, classifyEtcd(ctx, err))
		}
	}
	owner := m.IsOwner() // carries our key's create revision, no extra RPC
	g := Grant{Granted: true, Key: req.Key, Lease: m.Key(), Token: uint64(owner.GetCompare().GetCreateRevision())}
	l.mu.Lock()
	l.held[g.Lease] = m
	l.mu.Unlock()
	return g, nil
}

// Release implements Locker.
func (l *etcdLocker) Release(ctx context.Context, g Grant) error {
	l.mu.Lock()
	m := l.held[g.Lease]
	delete(l.held, g.Lease)
	l.mu.Unlock()
	if m == nil {
		return fmt.Errorf("etcd unlock %s: %w", g.Key, ErrNotHolder)
	}
	if err := m.Unlock(ctx); err != nil {
		return fmt.Errorf("etcd unlock %s: %w", g.Key, classifyEtcd(ctx, err))
	}
	return nil
}

// Close implements Locker: revoke the session lease, then close the client.
func (l *etcdLocker) Close() error {
	return errors.Join(l.sess.Close(), l.cli.Close())
}

func classifyEtcd(ctx context.Context, err error) error {
	if expired(ctx) {
		return context.DeadlineExceeded
	}
	if errors.Is(err, concurrency.ErrSessionExpired) {
		return fmt.Errorf("%w: %w", ErrNotHolder, err)
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
