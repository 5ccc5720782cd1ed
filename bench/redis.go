package bench

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockstep/lockstep/core/ctxtime"
	"math/rand/v2"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Redis client-side waiting: Redis has no queue, so a blocked client polls
// SET NX with jittered exponential backoff between these bounds until its
// wait runs out.
const (
	redisBackoffMin   = 500 * time.Microsecond
	redisBackoffMax   = 8 * time.Millisecond
	redisReadyTimeout = 10 * time.Second
	redisKeyPrefix    = "lockbench:"
)

// releaseScript deletes the lock only if it still holds our value, so a
// client whose lease expired cannot delete the next holder's lock.
var releaseScript = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

// RedisOptions configures a redis-server child process.
type RedisOptions struct {
	// Binary is the redis-server executable ("redis-server" from PATH when empty).
	Binary string
	// AOF turns on the append-only file with fsync on every write;
	// otherwise Redis keeps its default persistence (periodic RDB).
	AOF bool
	// Dir holds the data files and redis.log; the caller owns it.
	Dir string
}

type redisTarget struct {
	name  string
	addr  string
	child *child
}

var _ Target = (*redisTarget)(nil)

// NewRedisTarget starts redis-server on a free loopback port and waits
// until it answers PING.
func NewRedisTarget(ctx context.Context, opts RedisOptions) (Target, error) {
	bin := opts.Binary
	if bin == "" {
		bin = "redis-server"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("redis: %w (apt-get install -y redis-server)", err)
	}
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--protected-mode", "yes",
		"--dir", opts.Dir, "--daemonize", "no", "--logfile", "",
	}
	name := "redis"
	if opts.AOF {
		name = "redis-aof"
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	}
	c, err := startChild(childOptions{Path: path, Args: args, LogPath: filepath.Join(opts.Dir, "redis.log")})
	if err != nil {
		return nil, err
	}
	t := &redisTarget{name: name, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), child: c}
	if err := t.waitReady(ctx); err != nil {
		_ = c.Stop(time.Second)
		return nil, err
	}
	return t, nil
}

func (t *redisTarget) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, redisReadyTimeout)
	defer cancel()
	cl := t.newClient()
	defer cl.Close()
	for {
		if cl.Ping(ctx).Err() == nil {
			return nil
		}
		select {
		case <-t.child.Exited():
			return fmt.Errorf("redis-server exited at start (see redis.log)")
		case <-ctx.Done():
			return fmt.Errorf("redis-server not ready: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (t *redisTarget) newClient() *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                     t.addr,
		Protocol:                 2,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		PoolSize:                 2,
		MaxRetries:               -1, // a retried SET NX could report our own lock as taken
		ContextTimeoutEnabled:    true,
	})
}

func (t *redisTarget) Name() string { return t.name }

// Traits: no fencing (tokens are random), no queue (client polling), no
// shared mode, no policies.
func (t *redisTarget) Traits() Traits { return Traits{} }

func (t *redisTarget) NewLocker(_ context.Context, cfg ClientConfig) (Locker, error) {
	return &redisLocker{client: t.newClient(), rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}, nil
}

func (t *redisTarget) Close() error { return t.child.Stop(5 * time.Second) }

// redisLocker is the single-instance Redis lock recipe: SET NX PX to take,
// compare-and-delete to give back.
type redisLocker struct {
	client *redis.Client
	rng    *rand.Rand
}

var _ Locker = (*redisLocker)(nil)

// Acquire implements Locker; shared requests are taken exclusively.
func (l *redisLocker) Acquire(ctx context.Context, req AcquireRequest) (Grant, error) {
	token := l.rng.Uint64()
	value := strconv.FormatUint(token, 16)
	key := redisKeyPrefix + req.Key
	deadline := time.Now().Add(req.Wait)
	backoff := redisBackoffMin
	for {
		err := l.client.Do(ctx, "set", key, value, "nx", "px", req.TTL.Milliseconds()).Err()
		switch {
		case err == nil:
			return Grant{Granted: true, Key: req.Key, Lease: value, Token: token}, nil
		case !errors.Is(err, redis.Nil):
			return Grant{}, fmt.Errorf("redis set nx %s: %w", req.Key, classifyRedis(ctx, err))
		}
		// Full jitter keeps polling clients from marching in lockstep.
		pause := backoff/2 + time.Duration(l.rng.Int64N(int64(backoff/2)+1))
		if time.Now().Add(pause).After(deadline) {
			return Grant{Key: req.Key}, nil
		}
		if err := ctxtime.Sleep(ctx, pause); err != nil {
			return Grant{}, fmt.Errorf("redis wait %s: %w", req.Key, err)
		}
		backoff = min(2*backoff, redisBackoffMax)
	}
}

// Release implements Locker.
func (l *redisLocker) Release(ctx context.Context, g Grant) error {
	n, err := releaseScript.Run(ctx, l.client, []string{redisKeyPrefix + g.Key}, g.Lease).Int()
	if err != nil {
		return fmt.Errorf("redis release %s: %w", g.Key, classifyRedis(ctx, err))
	}
	if n != 1 {
		return fmt.Errorf("redis release %s: %w", g.Key, ErrNotHolder)
	}
	return nil
}

// Close implements Locker.
func (l *redisLocker) Close() error { return l.client.Close() }

// classifyRedis separates our own cancellation from server or network failure.
func classifyRedis(ctx context.Context, err error) error {
	if expired(ctx) {
		return context.DeadlineExceeded
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return fmt.Errorf("%w: %w", ErrTransport, err)
	}
	return fmt.Errorf("%w: %w", ErrServer, err)
}

// freeLoopbackPort asks the kernel for an unused 127.0.0.1 port. Another
// process could take it before the server binds; the start then fails loudly.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
