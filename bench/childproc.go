package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// childOptions says how to start a server process the bench owns.
type childOptions struct {
	Path    string
	Args    []string
	LogPath string // stdout and stderr go here
}

// child is a started server process. It is stopped by Stop and, on Linux,
// killed by the kernel if the bench dies first (see childSysProcAttr).
type child struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error // exit status, valid after done closes
}

// startChild starts the process without a context: its life is bounded by
// Stop, which every caller defers.
func startChild(opts childOptions) (*child, error) {
	logFile, err := os.Create(opts.LogPath)
	if err != nil {
		return nil, fmt.Errorf("child log: %w", err)
	}
	cmd := exec.Command(opts.Path, opts.Args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = childSysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", opts.Path, err)
	}
	c := &child{cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// Exited is closed once the process has exited.
func (c *child) Exited() <-chan struct{} { return c.done }

// Stop sends SIGTERM, waits up to grace, then SIGKILLs.
func (c *child) Stop(grace time.Duration) error {
	defer c.log.Close()
	select {
	case <-c.done:
		return nil
	default:
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s: %w", c.cmd.Path, err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
		return nil
	case <-t.C:
	}
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s: %w", c.cmd.Path, err)
	}
	<-c.done
	return nil
}
