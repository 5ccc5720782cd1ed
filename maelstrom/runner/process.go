package runner

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/lockstep/lockstep/maelstrom"
)

const (
	// stdinQueue bounds the lines waiting to be written to one node; a node
	// that stops reading loses what does not fit, like a full socket buffer.
	stdinQueue = 4096
	// maxLineBytes bounds one line a node prints.
	maxLineBytes = 32 << 20
	// maxLogBytes bounds each node's saved stderr.
	maxLogBytes = 4 << 20
)

// process is one node binary, spoken to through its stdin and stdout.
type process struct {
	id  string
	cmd *exec.Cmd
	in  chan []byte
	log *slog.Logger

	stdin   io.WriteCloser
	logFile *os.File

	closeOnce sync.Once
	exited    chan struct{} // closed when the process has exited
	exitErr   error
	dropped   int // lines not queued (guarded by mu)
	mu        sync.Mutex
	stopping  bool
	wg        sync.WaitGroup
}

// startProcess runs bin as node id. Each line it prints is decoded and
// handed to onMessage; stderr goes to logPath (capped).
func startProcess(id, bin string, args []string, logPath string, log *slog.Logger, onMessage func(maelstrom.Message)) (*process, error) {
	cmd := exec.Command(bin, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", id, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", id, err)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", id, err)
	}
	cmd.Stderr = &cappedWriter{w: logFile, left: maxLogBytes}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s (%s): %w", id, bin, err)
	}
	p := &process{id: id, cmd: cmd, in: make(chan []byte, stdinQueue), log: log, stdin: stdin, logFile: logFile, exited: make(chan struct{})}
	p.wg.Add(1)
	go p.write()
	go p.read(stdout, onMessage)
	go func() {
		p.wg.Wait() // cmd.Wait must follow the last read of stdout, not the writes
		p.exitErr = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// send queues one message for the node's stdin.
func (p *process) send(m maelstrom.Message) bool {
	line, err := json.Marshal(m)
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return false
	}
	select {
	case p.in <- append(line, '\n'):
		return true
	default:
		p.dropped++
		return false
	}
}

// write feeds stdin until stop closes the queue.
func (p *process) write() {
	defer p.stdin.Close()
	for line := range p.in {
		if _, err := p.stdin.Write(line); err != nil {
			p.log.Warn("node stdin closed", "node", p.id, "err", err)
			for range p.in { // drain until stop closes the channel
			}
			return
		}
	}
}

func (p *process) read(stdout io.Reader, onMessage func(maelstrom.Message)) {
	defer p.wg.Done()
	r := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := readLine(r, maxLineBytes)
		if len(line) > 0 {
			var m maelstrom.Message
			if jerr := json.Unmarshal(line, &m); jerr != nil || m.Dest == "" {
				p.log.Warn("node printed a line that is not a message", "node", p.id, "line", clip(line))
			} else if m.Src != p.id {
				p.log.Warn("node sent a message with a foreign src; dropped", "node", p.id, "src", m.Src)
			} else {
				onMessage(m)
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				p.log.Warn("reading node stdout", "node", p.id, "err", err)
				_, _ = io.Copy(io.Discard, r)
			}
			return
		}
	}
}

// readLine reads one line without its newline, failing on lines over max.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return nil, fmt.Errorf("line over %d bytes", max)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return line, err
		}
	}
}

// stop closes stdin (a Maelstrom node exits at EOF) and waits up to grace
// for the process to exit before killing it.
func (p *process) stop(grace time.Duration) {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.stopping = true
		close(p.in)
		p.mu.Unlock()
	})
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// exitedEarly reports whether the node exited before stop was called.
func (p *process) exitedEarly() (bool, error) {
	select {
	case <-p.exited:
		p.mu.Lock()
		stopping := p.stopping
		p.mu.Unlock()
		return !stopping, p.exitErr
	default:
		return false, nil
	}
}

// cappedWriter writes up to left bytes, then discards the rest.
type cappedWriter struct {
	w    io.Writer
	left int
	mu   sync.Mutex
}

func (c *cappedWriter) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left <= 0 {
		return len(b), nil
	}
	n := min(len(b), c.left)
	c.left -= n
	if _, err := c.w.Write(b[:n]); err != nil {
		return 0, err
	}
	if c.left == 0 {
		_, _ = io.WriteString(c.w, "\n[log truncated]\n")
	}
	return len(b), nil
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
