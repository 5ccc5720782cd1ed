// Command lockctl is lockstep's command-line client: one-shot acquire,
// acquire-many, release, renew, status, validate and cluster calls, watch, which
// follows a resource's events, and lock, which holds a lock for the life
// of a command (like etcdctl lock and consul lock).
//
//	lockctl acquire job --ttl 30s
//	lockctl release job LEASE_ID
//	lockctl lock job -- ./nightly-backup.sh
//
// Exit codes: 0 success; 1 a request failed (the error is printed); 2 a
// wrong command line; 3 the lock was not granted (busy, or the wait
// ended); 4 (lock) the lease was lost while the command ran; 5 an acquire
// with a wait was refused as a deadlock (the cycle is printed). validate
// exits 1 when the token is not a current holder's. lock
// otherwise exits with the command's own exit code.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes of lockctl.
const (
	exitOK         = 0
	exitFailed     = 1
	exitUsage      = 2
	exitNotGranted = 3
	exitLeaseLost  = 4
	// exitDeadlock: an acquire with a wait was refused because waiting
	// would have closed a wait-for cycle (the error names it).
	exitDeadlock = 5
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// usageError marks a wrong command line (exit 2).
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is lockctl with its arguments and streams passed in; it returns the
// exit code. ctx ends on SIGINT/SIGTERM.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	stdout, stderr = serialised(stdout), serialised(stderr)
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.code != exitOK {
			fmt.Fprintf(stderr, "lockctl: %v\n", ee.err)
		}
		return ee.code
	}
	// Cobra's own errors are all about the command line.
	fmt.Fprintf(stderr, "lockctl: %v\nRun 'lockctl --help' for usage.\n", err)
	return exitUsage
}

// newRoot builds the command tree. Every subcommand reads the shared
// flags from one globals value.
func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "lockctl",
		Short: "lockctl talks to a lockstep cluster",
		Long: `lockctl talks to a lockstep cluster over its HTTP/JSON API.

With no --endpoints it uses the lockd dev cluster (127.0.0.1:7070-7072).
Durations take Go syntax (500ms, 30s, 2m). Replies print as JSON, or
as a table with --output table. Shell completion: lockctl completion
bash|zsh|fish|powershell (see lockctl completion --help).

Exit codes: 0 success, 1 a request failed, 2 a wrong command line,
3 the lock was not granted, 4 (lock) the lease was lost while the command
ran, 5 a wait refused as a deadlock (the wait-for cycle is printed); lock
otherwise exits with its command's exit code.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%w", err) })
	g.register(root)
	g.registerOutput(root)
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return g.checkOutput() }
	root.AddCommand(acquireCommand(g), releaseCommand(g), renewCommand(g), statusCommand(g), validateCommand(g),
		clusterCommand(g), lockCommand(g), acquireManyCommand(g), watchCommand(g))
	return root
}

// serialised makes w safe for the lease's keep-alive logs and the
// command's output copy, which write from their own goroutines. A file is
// passed as is: its writes are atomic enough, and the command must get
// the terminal itself, not a pipe.
func serialised(w io.Writer) io.Writer {
	if _, ok := w.(*os.File); ok {
		return w
	}
	return &lockedWriter{w: w}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
