package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/client"
)

// acquireFlags are the options of acquire and lock.
type acquireFlags struct {
	ttl, wait  time.Duration
	mode       string
	requestID  string
	throughput bool
	// permits is --permits (acquire and lock only: acquire_many takes
	// plain locks).
	permits int
	// grace is the lease's grace window (README "Grace window").
	grace time.Duration
}

func (a *acquireFlags) register(cmd *cobra.Command, ttl, wait time.Duration) {
	f := cmd.Flags()
	f.DurationVar(&a.ttl, "ttl", ttl, "lease time-to-live")
	f.DurationVar(&a.wait, "wait", wait, "how long to wait in the queue (0: try once)")
	f.StringVar(&a.mode, "mode", "exclusive", "lock mode: exclusive or shared")
	f.StringVar(&a.requestID, "request-id", "", "makes a retried acquire idempotent (same id and resources, same request; another resource is another request)")
	f.BoolVar(&a.throughput, "throughput", false, "throughput policy: race other waiters instead of queueing in order")
	f.DurationVar(&a.grace, "grace", 0, "grace window (at most --ttl): after the lease expires nobody else gets the lock that long, and a renew revives it with its token")
}

// registerPermits adds --permits, for the single-resource commands.
func (a *acquireFlags) registerPermits(cmd *cobra.Command) {
	cmd.Flags().IntVar(&a.permits, "permits", 0, fmt.Sprintf("take one permit of a counting semaphore of N exclusive holders (2..%d; every caller must name the same N; 0: a plain lock)", api.MaxPermits))
}

func (a *acquireFlags) check() error {
	switch {
	case a.permits < 0 || a.permits > api.MaxPermits:
		return usageError("--permits must be in 0..%d", api.MaxPermits)
	case a.permits > 1 && a.mode == string(api.Shared):
		return usageError("--permits needs --mode exclusive: a semaphore's permits are exclusive")
	case a.ttl < time.Millisecond:
		return usageError("--ttl must be at least 1ms")
	case a.wait < 0:
		return usageError("--wait must be >= 0")
	case a.mode != string(api.Exclusive) && a.mode != string(api.Shared):
		return usageError("--mode must be exclusive or shared, not %q", a.mode)
	case a.grace < 0 || a.grace.Milliseconds() > a.ttl.Milliseconds():
		return usageError("--grace must be in 0..--ttl")
	}
	return nil
}

// wireRequestID is the request_id sent for --request-id and resources:
// bound to them as the Go client binds its RequestID (client.WireRequestID),
// so one id never names two resources' requests; empty without the flag.
func (a *acquireFlags) wireRequestID(resources ...string) string {
	if a.requestID == "" {
		return ""
	}
	return client.WireRequestID(a.requestID, resources...)
}

func (a *acquireFlags) policy() api.Policy {
	if a.throughput {
		return api.Throughput
	}
	return ""
}

// clientID is --client-id or a name telling who holds the lock.
func (g *globals) clientIDOrDefault() string {
	if g.clientID != "" {
		return g.clientID
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("lockctl-%s-%d", host, os.Getpid())
}

func acquireCommand(g *globals) *cobra.Command {
	var a acquireFlags
	cmd := &cobra.Command{
		Use:   "acquire RESOURCE",
		Short: "Take a lease on RESOURCE and print it (nobody renews it: see lock)",
		Example: `  lockctl acquire job --ttl 30s
  lockctl acquire job --ttl 30s --wait 1m --mode shared
  lockctl acquire pool --ttl 30s --wait 1m --permits 3
  lockctl acquire job --ttl 30s --grace 10s`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.check(); err != nil {
				return err
			}
			req := api.AcquireRequest{Resource: args[0], ClientID: g.clientIDOrDefault(), TTLMs: a.ttl.Milliseconds(),
				Mode: api.Mode(a.mode), WaitMs: a.wait.Milliseconds(), RequestID: a.wireRequestID(args...), Policy: a.policy(),
				Permits: int64(a.permits), GraceMs: a.grace.Milliseconds()}
			var out api.AcquireResponse
			if err := call(cmd.Context(), g, http.MethodPost, api.PathAcquire, req, &out, a.wait); err != nil {
				return failed(err)
			}
			if err := g.print(cmd.OutOrStdout(), out); err != nil {
				return failed(err)
			}
			if !out.Granted {
				return &exitError{code: exitNotGranted, err: fmt.Errorf("%q not granted (queue position %d)", args[0], out.QueuePosition)}
			}
			return nil
		},
	}
	a.register(cmd, 30*time.Second, 0)
	a.registerPermits(cmd)
	return cmd
}

func releaseCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "release RESOURCE LEASE_ID",
		Short:   "Release a lease",
		Example: `  lockctl release job 3f0c...e1`,
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var out api.ReleaseResponse
			req := api.ReleaseRequest{Resource: args[0], LeaseID: args[1]}
			if err := call(cmd.Context(), g, http.MethodPost, api.PathRelease, req, &out, 0); err != nil {
				return failed(err)
			}
			return failed(g.print(cmd.OutOrStdout(), out))
		},
	}
}

func renewCommand(g *globals) *cobra.Command {
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:     "renew RESOURCE LEASE_ID",
		Short:   "Extend a lease (by its own TTL unless --ttl)",
		Example: `  lockctl renew job 3f0c...e1 --ttl 1m`,
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl < 0 {
				return usageError("--ttl must be >= 0")
			}
			var out api.RenewResponse
			req := api.RenewRequest{Resource: args[0], LeaseID: args[1], TTLMs: ttl.Milliseconds()}
			if err := call(cmd.Context(), g, http.MethodPost, api.PathRenew, req, &out, 0); err != nil {
				return failed(err)
			}
			return failed(g.print(cmd.OutOrStdout(), out))
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "new time-to-live (0: the lease's own)")
	return cmd
}

func statusCommand(g *globals) *cobra.Command {
	var stale bool
	cmd := &cobra.Command{
		Use:   "status RESOURCE",
		Short: "Show RESOURCE's holders and queue",
		Example: `  lockctl status job
  lockctl status job --stale --output table`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{"resource": {args[0]}}
			if stale {
				q.Set("stale", "true")
			}
			var out api.StatusResponse
			if err := call(cmd.Context(), g, http.MethodGet, api.PathStatus+"?"+q.Encode(), nil, &out, 0); err != nil {
				return failed(err)
			}
			return failed(g.print(cmd.OutOrStdout(), out))
		},
	}
	cmd.Flags().BoolVar(&stale, "stale", false, "answer from the member's own state, without a trip through the log")
	return cmd
}

// validateCommand exits 0 only when TOKEN is surely a current holder's:
// not valid and a failed request both exit 1, so a script guarding a
// write with it fails safe either way (the printed reply tells them apart).
func validateCommand(g *globals) *cobra.Command {
	var stale bool
	cmd := &cobra.Command{
		Use:   "validate RESOURCE TOKEN",
		Short: "Exit 0 if TOKEN is the fencing token of a current holder of RESOURCE, 1 if not",
		Example: `  lockctl validate job 42 && ./write-with-token.sh 42
  lockctl validate job 42 --stale`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{"resource": {args[0]}, "token": {args[1]}}
			if stale {
				q.Set("stale", "true")
			}
			var out api.ValidateResponse
			if err := call(cmd.Context(), g, http.MethodGet, api.PathValidate+"?"+q.Encode(), nil, &out, 0); err != nil {
				return failed(err)
			}
			if err := g.print(cmd.OutOrStdout(), out); err != nil {
				return failed(err)
			}
			if !out.Valid {
				return &exitError{code: exitFailed, err: fmt.Errorf("token %s is not a current holder's of %q", args[1], args[0])}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&stale, "stale", false, "answer from the member's own state, without a trip through the log (may call a just-ended lease's token valid)")
	return cmd
}

func clusterCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "cluster",
		Short: "Show the members and shards",
		Example: `  lockctl cluster
  lockctl cluster --output table`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out api.ClusterResponse
			if err := call(cmd.Context(), g, http.MethodGet, api.PathCluster, nil, &out, 0); err != nil {
				return failed(err)
			}
			return failed(g.print(cmd.OutOrStdout(), out))
		},
	}
}

// exactArgs is cobra.ExactArgs reporting a usage error (exit 2).
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError("%s takes %d argument(s), got %d (see lockctl %s --help)", cmd.Name(), n, len(args), cmd.Name())
		}
		return nil
	}
}

// minArgs is cobra.MinimumNArgs reporting a usage error (exit 2).
func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usageError("%s takes at least %d argument(s), got %d (see lockctl %s --help)", cmd.Name(), n, len(args), cmd.Name())
		}
		return nil
	}
}
