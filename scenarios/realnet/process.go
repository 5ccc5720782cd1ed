package realnet

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// process is one running lockd.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startProcess runs bin with args, its output appended to logPath.
func startProcess(bin string, args []string, logPath string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("member log: %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C of the runner must not reach the
	// members before the runner has stopped them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return errors.New("process exited")
	default:
	}
	return p.cmd.Process.Signal(sig)
}

// kill is kill -9: no shutdown path runs, only what reached the disk stays.
func (p *process) kill() {
	_ = p.signal(syscall.SIGKILL)
	<-p.done
}

// stop asks for a clean shutdown and kills after grace.
func (p *process) stop(grace time.Duration) {
	_ = p.signal(syscall.SIGCONT) // a paused process cannot handle SIGTERM
	_ = p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill()
	}
}

// exited reports whether the process has ended on its own.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
