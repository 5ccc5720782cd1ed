package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/ctxtime"
)

// Bounds of relaying one request.
const (
	// maxAttempts bounds the members tried for one request.
	maxAttempts = 8
	// maxReplyBytes bounds a member's reply.
	maxReplyBytes = 1 << 20
	// maxWait bounds the acquire wait the gateway adds to a deadline; a
	// member refuses more than its MaxWait anyway.
	maxWait = time.Hour
)

// call is one client request as the gateway relays it.
type call struct {
	op     string
	method string
	uri    string // path and query
	body   []byte
	ctype  string
	// auth is the client's Authorization header, passed through: the
	// member that receives the request checks the token.
	auth     string
	resource string // "" when the request names none: any member serves it
	wait     time.Duration
	// safe: applying it twice is harmless (a read, or an acquire with a
	// request_id, which members dedupe), so it may be retried after a
	// failure that came after sending it.
	safe bool
}

// parseCall reads what routing needs from a request. A body a member would
// refuse is still sent to one, so bad input gets a member's own answer.
func parseCall(r *http.Request, body []byte) call {
	c := call{op: "other", method: r.Method, uri: r.URL.RequestURI(), body: body, ctype: r.Header.Get("Content-Type"),
		auth: r.Header.Get("Authorization")}
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch r.URL.Path {
	case api.PathAcquire, api.PathRelease, api.PathRenew:
		c.op = r.URL.Path[len("/lock/"):]
		var in struct {
			Resource  string `json:"resource"`
			Wait      int64  `json:"wait"`
			RequestID string `json:"request_id"`
		}
		_ = json.Unmarshal(body, &in)
		c.resource = in.Resource
		c.wait = min(max(time.Duration(in.Wait)*time.Millisecond, 0), maxWait)
		c.safe = read || (c.op == "acquire" && in.RequestID != "")
	case api.PathAcquireMany:
		// Routed by the first resource: a request on one shard goes
		// straight to its leader; a canonical one is split by that member.
		var in struct {
			Resources []string `json:"resources"`
			Wait      int64    `json:"wait"`
			RequestID string   `json:"request_id"`
		}
		_ = json.Unmarshal(body, &in)
		c.op = "acquire_many"
		if len(in.Resources) > 0 {
			c.resource = in.Resources[0]
		}
		c.wait = min(max(time.Duration(in.Wait)*time.Millisecond, 0), maxWait)
		c.safe = in.RequestID != ""
	case api.PathStatus:
		c.op, c.resource, c.safe = "status", r.URL.Query().Get("resource"), read
	case api.PathCluster:
		c.op, c.safe = "cluster", read
	default:
		c.safe = read
	}
	return c
}

// relay serves every API request a member would: it reads the body, sends
// the request to the leader of its shard and relays the reply.
func (g *Gateway) relay(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, api.CodeInvalidArgument, fmt.Sprintf("invalid argument: body larger than %d bytes", tooBig.Limit))
			return
		}
		writeError(w, api.CodeInvalidArgument, "invalid argument: reading the body: "+err.Error())
		return
	}
	c := parseCall(r, body)
	start := time.Now()
	ctx, span := g.startRelay(r, c)
	ctx, cancel := context.WithTimeout(ctx, g.cfg.RequestTimeout+c.wait)
	defer cancel()
	a := g.forward(ctx, c)
	a.write(w)
	g.metrics.requests.WithLabelValues(c.op, strconv.Itoa(a.status)).Inc()
	g.endRelay(ctx, span, c, a.status, start)
}

// outcome is one attempt's result: a final answer, or a reason to retry.
type outcome struct {
	answer answer
	// retry names why another member may do better ("" when final).
	retry string
	// unknown: the request may have been applied.
	unknown bool
}

// forward sends c to its shard's leader and retries, with backoff and a
// fresh map, while the attempt surely did not apply (or c is safe), the
// deadline allows and attempts remain; each retry avoids the members that
// failed it. When it gives up it relays the last member answer, or 504
// outcome_unknown when some attempt might have applied (a 503 would tell
// the client nothing happened).
func (g *Gateway) forward(ctx context.Context, c call) answer {
	p := g.routes.Picker(c.resource, int(g.spread.Add(1)))
	var last answer
	unknown := false
	for attempt := range maxAttempts {
		seen := g.routes.Generation()
		addr, _ := p.Next()
		actx, span := g.startAttempt(ctx, addr)
		o := g.attempt(actx, addr, c)
		endAttempt(span, o)
		if o.retry == "" {
			return o.answer
		}
		g.metrics.retries.WithLabelValues(o.retry).Inc()
		g.cfg.Logger.Debug("gateway: retrying", "op", c.op, "member", addr, "reason", o.retry, "attempt", attempt+1)
		p.Failed(addr)
		unknown = unknown || o.unknown
		if o.answer.status != 0 {
			last = o.answer
		}
		pause := g.backoff(attempt)
		if deadline, ok := ctx.Deadline(); ctx.Err() != nil || (ok && time.Until(deadline) < pause) {
			break
		}
		if err := g.routes.Refresh(ctx, seen); err != nil {
			g.cfg.Logger.Debug("gateway: refresh before retry", "err", err)
		}
		if ctxtime.Sleep(ctx, pause) != nil {
			break
		}
	}
	switch {
	case unknown:
		return errorAnswer(api.CodeOutcomeUnknown, "outcome unknown: the gateway lost the member's reply and could not settle it before the deadline")
	case last.status != 0:
		return last
	default:
		return errorAnswer(api.CodeUnavailable, "unavailable: the gateway reached no member in time")
	}
}

// attempt sends c to the member at addr once.
func (g *Gateway) attempt(ctx context.Context, addr string, c call) outcome {
	req, err := http.NewRequestWithContext(ctx, c.method, g.scheme+"://"+addr+c.uri, bytes.NewReader(c.body))
	if err != nil {
		return outcome{answer: errorAnswer(api.CodeInternal, "internal: build request: "+err.Error())}
	}
	if c.ctype != "" {
		req.Header.Set("Content-Type", c.ctype)
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := g.http.Do(req)
	if err != nil {
		return g.lost(ctx, c, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		return g.lost(ctx, c, err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: body}
	g.routes.Notice(addr, resp.Header)
	switch {
	case resp.StatusCode == http.StatusMisdirectedRequest:
		return outcome{answer: a, retry: "not_leader"}
	case resp.StatusCode == http.StatusServiceUnavailable && a.code().NotApplied():
		// unavailable or overloaded: nothing was done, another member may
		// serve it. The code names the retry.
		return outcome{answer: a, retry: string(a.code())}
	}
	return outcome{answer: a}
}

// lost judges an attempt that got no reply. Only a failed dial surely did
// not reach the member; after that the request may have been applied, so
// it is retried only when c is safe, else answered 504 outcome_unknown as
// a member answers a proposal whose result it lost.
func (g *Gateway) lost(ctx context.Context, c call, err error) outcome {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" && ctx.Err() == nil {
		return outcome{retry: "dial"}
	}
	if c.safe && ctx.Err() == nil {
		return outcome{retry: "lost", unknown: true}
	}
	return outcome{answer: errorAnswer(api.CodeOutcomeUnknown, "outcome unknown: the member's reply was lost: "+err.Error())}
}

// backoff is the pause before retry number retry: full jitter up to
// min(BackoffMax, BackoffBase*2^retry).
func (g *Gateway) backoff(retry int) time.Duration {
	ceiling := g.cfg.BackoffBase
	for i := 0; i < retry && ceiling < g.cfg.BackoffMax; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, g.cfg.BackoffMax)
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}
