package proxy

import (
	"errors"
	"io"
	"net"
	"time"
)

// chunk is bytes read from one side, stamped with when; a nil data with
// eof set carries the close.
type chunk struct {
	data []byte
	at   time.Time
	eof  bool
}

const (
	// chunkBytesMax is one read; chunksQueuedMax bound what a held
	// direction buffers before TCP backpressure stalls the sender.
	chunkBytesMax   = 32 << 10
	chunksQueuedMax = 64
)

// run carries sp over l until either side ends or l resets.
func (l *Link) run(sp *splice) {
	defer l.detach(sp)
	defer sp.close()
	done := make(chan struct{}, 2)
	go func() { l.pump(sp, sp.client, sp.server); done <- struct{}{} }()
	go func() { l.pump(sp, sp.server, sp.client); done <- struct{}{} }()
	<-done
	<-done
}

// pump copies src to dst: a reader stamps chunks and a writer releases
// each when the link passes and its delay is up, so delay is latency, not
// a throughput cap.
func (l *Link) pump(sp *splice, src, dst net.Conn) {
	queue := make(chan chunk, chunksQueuedMax)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, chunkBytesMax)
			n, err := src.Read(buf)
			if n > 0 {
				queue <- chunk{data: buf[:n], at: time.Now()}
			}
			if err != nil {
				queue <- chunk{at: time.Now(), eof: errors.Is(err, io.EOF)}
				return
			}
		}
	}()
	for c := range queue {
		if !l.release(c.at) {
			sp.close()
			break
		}
		if c.data == nil {
			if c.eof {
				halfClose(dst)
				continue
			}
			sp.close() // a read error other than EOF: end both sides
			break
		}
		if _, err := dst.Write(c.data); err != nil {
			sp.close()
			break
		}
	}
	for range queue { // let the reader finish after a close
	}
}

// release waits until a chunk read at may go: the link passes and its
// delay since at is over. It reports false when the link resets.
func (l *Link) release(at time.Time) bool {
	for {
		state, delay, changed := l.view()
		switch state {
		case Reset:
			return false
		case Blackhole:
			<-changed
			continue
		}
		wait := time.Until(at.Add(delay))
		if wait <= 0 {
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
			return true
		case <-changed:
			t.Stop()
		}
	}
}

// halfClose passes a close on as TCP does: the peer reads EOF, and may
// still answer.
func halfClose(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		return
	}
	_ = c.Close()
}
