package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/client"
)

// Environment of the command lock runs.
const (
	envResource     = "LOCKSTEP_RESOURCE"
	envLeaseID      = "LOCKSTEP_LEASE_ID"
	envFencingToken = "LOCKSTEP_FENCING_TOKEN"
)

// releaseTimeout bounds the release after the command ends.
const releaseTimeout = 5 * time.Second

func lockCommand(g *globals) *cobra.Command {
	var a acquireFlags
	var killAfter time.Duration
	cmd := &cobra.Command{
		Use:   "lock RESOURCE [-- COMMAND [ARG...]]",
		Short: "Hold RESOURCE while COMMAND runs (or until interrupted)",
		Long: `lock acquires RESOURCE (waiting up to --wait), keeps the lease alive by
renewing it every TTL/2, runs COMMAND with LOCKSTEP_RESOURCE,
LOCKSTEP_LEASE_ID and LOCKSTEP_FENCING_TOKEN in its environment, releases
the lock when COMMAND exits and exits with COMMAND's exit code. Pass the
fencing token to whatever the lock protects, so a write from a holder
whose lease ran out can be refused.

If the lease is lost while COMMAND runs, COMMAND gets SIGTERM, then
SIGKILL after --kill-after, and lockctl exits 4. SIGINT or SIGTERM to
lockctl is passed on to COMMAND the same way, then the lock is released.
Without COMMAND, lock prints the lease and holds it until interrupted.`,
		Example: `  lockctl lock nightly-backup -- ./backup.sh --full
  lockctl lock --ttl 30s --wait 5m job -- sh -c 'echo token $LOCKSTEP_FENCING_TOKEN'
  lockctl lock --mode shared --kill-after 30s reports -- ./read-only-report.sh
  lockctl lock maintenance      # hold until Ctrl-C, like etcdctl lock
  lockctl lock --permits 3 --wait 5m pool -- ./worker.sh  # at most 3 at once, like consul lock -n 3`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.check(); err != nil {
				return err
			}
			if killAfter <= 0 {
				return usageError("--kill-after must be > 0")
			}
			return runLock(cmd, g, a, killAfter, args[0], args[1:])
		},
	}
	a.register(cmd, 10*time.Second, 10*time.Minute)
	a.registerPermits(cmd)
	cmd.Flags().DurationVar(&killAfter, "kill-after", 10*time.Second, "after SIGTERM, how long COMMAND has before SIGKILL")
	return cmd
}

// runLock takes the lease, runs or waits, and releases.
func runLock(cmd *cobra.Command, g *globals, a acquireFlags, killAfter time.Duration, resource string, command []string) error {
	ctx := cmd.Context()
	endpoints, err := g.endpointList()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	tlsCfg, err := g.tls.config()
	if err != nil {
		return err
	}
	c, err := client.New(client.Config{Endpoints: endpoints, ClientID: g.clientIDOrDefault(), Logger: logger, Token: g.token, TLS: tlsCfg})
	if err != nil {
		return usageError("%w", err)
	}
	lease, err := c.Acquire(ctx, resource, client.AcquireOptions{
		TTL: a.ttl, Wait: a.wait, Mode: api.Mode(a.mode), RequestID: a.requestID, Policy: a.policy(), KeepAlive: true,
		Permits: a.permits, Grace: a.grace,
	})
	if errors.Is(err, client.ErrNotGranted) {
		return &exitError{code: exitNotGranted, err: err}
	}
	if errors.Is(err, client.ErrServerSpeaksTLS) {
		return errSpeaksTLS(strings.Join(endpoints, ","))
	}
	if err != nil {
		return failed(err)
	}
	var held error
	if len(command) == 0 {
		held = holdUntilDone(ctx, g, cmd.OutOrStdout(), lease)
	} else {
		held = runHolding(ctx, cmd, lease, command, killAfter)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	// A lease lost while held already made held an exitLeaseLost.
	if err := lease.Release(rctx); err != nil && held == nil {
		return failed(fmt.Errorf("release %q: %w", resource, err))
	}
	return held
}

// holdUntilDone prints the lease and holds it until ctx ends or it is lost.
func holdUntilDone(ctx context.Context, g *globals, stdout io.Writer, lease *client.Lease) error {
	out := heldLease{Resource: lease.Resource(), LeaseID: lease.ID(), FencingToken: lease.Token()}
	if err := g.print(stdout, out); err != nil {
		return failed(err)
	}
	select {
	case <-ctx.Done():
		return nil
	case <-lease.Lost():
		return &exitError{code: exitLeaseLost, err: fmt.Errorf("lease on %q lost: %w", lease.Resource(), lease.Err())}
	}
}

// runHolding runs command while the lease is held and returns its exit
// code as an exitError (nil for 0).
func runHolding(ctx context.Context, cmd *cobra.Command, lease *client.Lease, command []string, killAfter time.Duration) error {
	child := exec.Command(command[0], command[1:]...)
	child.Stdin, child.Stdout, child.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	child.Env = append(os.Environ(),
		envResource+"="+lease.Resource(),
		envLeaseID+"="+lease.ID(),
		envFencingToken+"="+strconv.FormatUint(lease.Token(), 10),
	)
	if err := child.Start(); err != nil {
		return failed(fmt.Errorf("start %q: %w", command[0], err))
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	select {
	case err := <-exited:
		return commandExit(err)
	case <-lease.Lost():
		stopChild(child, exited, killAfter)
		return &exitError{code: exitLeaseLost, err: fmt.Errorf("lease on %q lost while %q ran (stopped it): %w",
			lease.Resource(), command[0], lease.Err())}
	case <-ctx.Done():
		// lockctl was interrupted: the command gets the same signal
		// treatment, then the caller releases.
		return commandExit(stopChild(child, exited, killAfter))
	}
}

// stopChild sends SIGTERM, then SIGKILL after killAfter, and returns the
// command's end.
func stopChild(child *exec.Cmd, exited <-chan error, killAfter time.Duration) error {
	_ = child.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(killAfter)
	defer timer.Stop()
	select {
	case err := <-exited:
		return err
	case <-timer.C:
		_ = child.Process.Kill()
		return <-exited
	}
}

// commandExit turns the command's end into lockctl's exit: its code, or
// 128+signal when a signal ended it (as shells report it).
func commandExit(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return failed(fmt.Errorf("wait for command: %w", err))
	}
	code := ee.ExitCode()
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	return &exitError{code: code}
}
