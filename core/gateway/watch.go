package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/ctxtime"
)

// watchChunk is the most the gateway reads from a member's watch stream at
// once; every read is written and flushed to the client at once.
const watchChunk = 32 << 10

// watch relays GET /lock/watch as a stream. The gateway keeps no history,
// and every member serves a watch from its own applied log with the same
// indexes, so it opens the watch on one member (the leader of the
// resource's shard when the map knows it, the furthest ahead) and copies
// the stream to the client as it comes, until either side ends. Opening is
// retried on another member while none answered, or one answered 503
// unavailable, within RequestTimeout: a watch changes nothing, so every
// retry is safe. Any other answer (400, 401, 403, 410, 429...) is relayed.
func (g *Gateway) watch(w http.ResponseWriter, r *http.Request) {
	c := call{op: "watch", method: r.Method, uri: r.URL.RequestURI(), auth: r.Header.Get("Authorization"), safe: true}
	if prefix, _ := strconv.ParseBool(r.URL.Query().Get("prefix")); !prefix {
		c.resource = r.URL.Query().Get("resource") // a prefix spans every shard: any member
	}
	start := time.Now()
	ctx, span := g.startRelay(r, c)
	status, cut := g.relayWatch(ctx, w, c)
	g.metrics.requests.WithLabelValues(c.op, strconv.Itoa(status)).Inc()
	g.endRelay(ctx, span, c, status, start)
	if cut && r.Context().Err() == nil {
		// The member's stream was cut off: cut the client's too, as a
		// direct connection to the member would end, so the watcher
		// resumes rather than take the end for a clean one (the member
		// ends a stream cleanly only when it stops).
		panic(http.ErrAbortHandler)
	}
}

// relayWatch opens c on a member and streams it to w; it returns the
// status the client got and whether the member's stream was cut off.
func (g *Gateway) relayWatch(ctx context.Context, w http.ResponseWriter, c call) (status int, cut bool) {
	p := g.routes.Picker(c.resource, int(g.spread.Add(1)))
	deadline := time.Now().Add(g.cfg.RequestTimeout)
	var last answer
	for attempt := range maxAttempts {
		seen := g.routes.Generation()
		addr, _ := p.Next()
		resp, o := g.openWatch(ctx, addr, c, time.Until(deadline))
		if resp != nil {
			defer resp.Body.Close()
			return resp.StatusCode, streamWatch(w, resp)
		}
		if o.retry == "" {
			o.answer.write(w)
			return o.answer.status, false
		}
		g.metrics.retries.WithLabelValues(o.retry).Inc()
		p.Failed(addr)
		if o.answer.status != 0 {
			last = o.answer
		}
		pause := g.backoff(attempt)
		if ctx.Err() != nil || time.Until(deadline) < pause {
			break
		}
		if err := g.routes.Refresh(ctx, seen); err != nil {
			g.cfg.Logger.Debug("gateway: refresh before retry", "err", err)
		}
		if ctxtime.Sleep(ctx, pause) != nil {
			break
		}
	}
	if last.status == 0 {
		last = errorAnswer(api.CodeUnavailable, "unavailable: the gateway reached no member to serve the watch in time")
	}
	last.write(w)
	return last.status, false
}

// openWatch sends c to addr and waits up to timeout for the reply's
// headers. A 200 returns the response, its body the stream to relay;
// anything else is an outcome as in attempt.
func (g *Gateway) openWatch(ctx context.Context, addr string, c call, timeout time.Duration) (*http.Response, outcome) {
	actx, span := g.startAttempt(ctx, addr)
	// The deadline covers the opening only: once the member answers, the
	// stream lasts as long as the client stays (ctx).
	actx, cancel := context.WithCancel(actx)
	timer := time.AfterFunc(max(timeout, 0), cancel)
	req, err := http.NewRequestWithContext(actx, c.method, g.scheme+"://"+addr+c.uri, nil)
	if err != nil {
		cancel()
		o := outcome{answer: errorAnswer(api.CodeInternal, "internal: build request: "+err.Error())}
		endAttempt(span, o)
		return nil, o
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := g.http.Do(req)
	opened := timer.Stop()
	var o outcome
	switch {
	case err != nil:
		o = g.lost(ctx, c, err)
	case !opened:
		resp.Body.Close()
		o = outcome{retry: "lost"}
	case resp.StatusCode == http.StatusOK:
		g.routes.Notice(addr, resp.Header)
		o = outcome{answer: answer{status: resp.StatusCode}}
		endAttempt(span, o)
		// cancel is left to the end of ctx (the client leaving) or of the
		// stream: the transport releases the request once its body is
		// read to the end or closed.
		return &http.Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: cancelOnClose{resp.Body, cancel}}, o
	default:
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
		resp.Body.Close()
		if rerr != nil {
			o = outcome{retry: "lost"}
			break
		}
		o = outcome{answer: answer{status: resp.StatusCode, header: resp.Header, body: body}}
		if resp.StatusCode == http.StatusServiceUnavailable && o.answer.code().NotApplied() {
			o.retry = string(o.answer.code())
		}
	}
	cancel()
	endAttempt(span, o)
	return nil, o
}

// cancelOnClose cancels the stream's request when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// streamWatch copies a member's watch stream to the client, flushing every
// read, until the member ends it (false) or it is cut off (true): the
// member died, or the client left.
func streamWatch(w http.ResponseWriter, resp *http.Response) (cut bool) {
	for _, k := range relayedHeaders {
		if v := resp.Header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	w.WriteHeader(resp.StatusCode)
	if err := rc.Flush(); err != nil {
		return false // the client left
	}
	buf := make([]byte, watchChunk)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return false
			}
			if rc.Flush() != nil {
				return false
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return false
		case err != nil:
			return true
		}
	}
}
