package scenarios

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/models"
)

// recordingTransport sits under a client's HTTP stack and records every
// lock request and what the API answered as one history operation: each
// attempt of a retried call, each keep-alive renewal, the renew that
// confirms a lease after a long wait. The history is then exactly what went
// over the wire, and the model judges each answer.
type recordingTransport struct {
	inner http.RoundTripper
	rec   *recorder
	// gate blocks requests while the client is paused (a GC pause stops
	// every goroutine of the process, keep-alive included).
	gate *pauseGate
}

var _ http.RoundTripper = (*recordingTransport)(nil)

// maxRecordedBody bounds what is read of a reply to record it.
const maxRecordedBody = 1 << 20

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.gate.wait(req.Context()); err != nil {
		return nil, err
	}
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		if named := setWireRequestID(req, body); !bytes.Equal(named, body) {
			// A copy: a RoundTripper must not change its caller's request.
			req, body = req.Clone(req.Context()), named
			req.ContentLength = int64(len(body))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(named)), nil }
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	in, ok := lockInput(req, body)
	if !ok {
		return t.inner.RoundTrip(req)
	}
	lane := t.rec.takeLane()
	call := t.rec.now()
	resp, err := t.inner.RoundTrip(req)
	out := models.LockOutput{Unknown: true}
	if err == nil {
		reply, rerr := io.ReadAll(io.LimitReader(resp.Body, maxRecordedBody))
		_ = resp.Body.Close()
		if rerr != nil {
			err = rerr
		} else {
			resp.Body = io.NopCloser(bytes.NewReader(reply))
			out = lockOutput(in, resp.StatusCode, reply)
		}
	}
	ret := t.rec.now()
	if out.Unknown {
		ret = never
	}
	t.rec.op(checker.Op{ClientID: lane, Input: in, Output: out, Call: call, Return: ret})
	t.rec.giveLane(lane, out.Unknown)
	return resp, err
}

// lockInput decodes a lock request into the model's input.
func lockInput(req *http.Request, body []byte) (models.LockInput, bool) {
	ms := func(v int64) int64 { return v * int64(time.Millisecond) }
	switch req.URL.Path {
	case api.PathAcquire:
		var a api.AcquireRequest
		if json.Unmarshal(body, &a) != nil {
			return models.LockInput{}, false
		}
		return models.LockInput{Op: models.Acquire, Resource: a.Resource, ClientID: a.ClientID, Mode: string(a.Mode),
			TTLNs: ms(a.TTLMs), Wait: a.WaitMs > 0, RequestID: a.RequestID, Policy: string(a.Policy), Permits: a.Permits, GraceNs: ms(a.GraceMs)}, true
	case api.PathAcquireMany:
		var a api.AcquireManyRequest
		if json.Unmarshal(body, &a) != nil || a.Order != "" {
			// A canonical request is several atomic ones on different
			// groups, with log times the model cannot order together.
			return models.LockInput{}, false
		}
		return models.LockInput{Op: models.AcquireMany, Resources: a.Resources, ClientID: a.ClientID, Mode: string(a.Mode),
			TTLNs: ms(a.TTLMs), Wait: a.WaitMs > 0, RequestID: a.RequestID, Policy: string(a.Policy), GraceNs: ms(a.GraceMs)}, true
	case api.PathRelease:
		var r api.ReleaseRequest
		if json.Unmarshal(body, &r) != nil {
			return models.LockInput{}, false
		}
		return models.LockInput{Op: models.Release, Resource: r.Resource, LeaseID: r.LeaseID}, true
	case api.PathRenew:
		var r api.RenewRequest
		if json.Unmarshal(body, &r) != nil {
			return models.LockInput{}, false
		}
		return models.LockInput{Op: models.Renew, Resource: r.Resource, LeaseID: r.LeaseID, TTLNs: ms(r.TTLMs)}, true
	case api.PathStatus:
		q := req.URL.Query()
		if q.Get("stale") != "" {
			return models.LockInput{}, false // not linearizable by contract
		}
		return models.LockInput{Op: models.Status, Resource: q.Get("resource")}, true
	case api.PathValidate:
		q := req.URL.Query()
		token, err := strconv.ParseUint(q.Get("token"), 10, 64)
		if q.Get("stale") != "" || err != nil {
			return models.LockInput{}, false // stale: not linearizable by contract
		}
		return models.LockInput{Op: models.Validate, Resource: q.Get("resource"), Token: token}, true
	}
	return models.LockInput{}, false
}

// lockOutput decodes a reply into the model's output. Only answers that
// prove what happened are definite: 2xx, the 4xx of the contract, and 503
// unavailable or overloaded (surely not applied); everything else is unknown.
func lockOutput(in models.LockInput, status int, body []byte) models.LockOutput {
	ms := func(v int64) int64 { return v * int64(time.Millisecond) }
	unknown := models.LockOutput{Unknown: true}
	if status/100 != 2 {
		var e api.Error
		if json.Unmarshal(body, &e) != nil || e.Code == "" {
			return unknown
		}
		switch e.Code {
		case api.CodeNotHolder:
			return models.LockOutput{Code: models.CodeNotHolder}
		case api.CodeLeaseEnded:
			if in.Op == models.AcquireMany {
				// The error names only the first lease; the model wants
				// all of them, so the answer proves less than it says.
				return unknown
			}
			return models.LockOutput{Code: models.CodeLeaseEnded, LeaseID: e.LeaseID, Token: e.FencingToken}
		case api.CodeRequestIDReused:
			return models.LockOutput{Code: models.CodeRequestIDReused}
		case api.CodeDeadlock:
			return models.LockOutput{Code: models.CodeDeadlock, Cycle: e.Cycle}
		case api.CodeInvalidArgument, api.CodeBadGrace, api.CodeResourceExhausted, api.CodeUnavailable, api.CodeOverloaded, api.CodeCrossShard:
			return models.LockOutput{Code: string(e.Code)}
		}
		return unknown
	}
	switch in.Op {
	case models.Acquire:
		var a api.AcquireResponse
		if json.Unmarshal(body, &a) != nil {
			return unknown
		}
		out := models.LockOutput{LogTimeNs: ms(a.LogTimeMs), Granted: a.Granted}
		if a.Granted {
			out.LeaseID, out.Token, out.ExpiresAtNs = a.LeaseID, a.FencingToken, ms(a.LogTimeMs+a.ExpiresInMs)
		}
		return out
	case models.AcquireMany:
		var a api.AcquireManyResponse
		if json.Unmarshal(body, &a) != nil {
			return unknown
		}
		out := models.LockOutput{LogTimeNs: ms(a.LogTimeMs), Granted: a.Granted}
		for _, l := range a.Leases {
			out.Leases = append(out.Leases, models.ManyLease{Resource: l.Resource, LeaseID: l.LeaseID, Token: l.FencingToken,
				ExpiresAtNs: ms(a.LogTimeMs + l.ExpiresInMs)})
		}
		return out
	case models.Release:
		var r api.ReleaseResponse
		if json.Unmarshal(body, &r) != nil {
			return unknown
		}
		return models.LockOutput{LogTimeNs: ms(r.LogTimeMs)}
	case models.Renew:
		var r api.RenewResponse
		if json.Unmarshal(body, &r) != nil {
			return unknown
		}
		return models.LockOutput{LogTimeNs: ms(r.LogTimeMs), Token: r.FencingToken, ExpiresAtNs: ms(r.LogTimeMs + r.ExpiresInMs)}
	case models.Status:
		var st api.StatusResponse
		if json.Unmarshal(body, &st) != nil {
			return unknown
		}
		out := models.LockOutput{LogTimeNs: ms(st.LogTimeMs), Permits: st.Permits}
		for _, w := range st.Queue {
			out.Queue = append(out.Queue, models.WaiterView{Client: w.ClientID, Mode: string(w.Mode)})
		}
		for _, h := range st.Holders {
			hv := models.HolderView{Fingerprint: h.LeaseFingerprint, Mode: string(h.Mode),
				Token: h.FencingToken, ExpiresAtNs: ms(st.LogTimeMs + h.ExpiresInMs)}
			if h.State == api.HolderGrace {
				hv.GraceUntilNs = ms(st.LogTimeMs + h.GraceRemainingMs)
			}
			out.Holders = append(out.Holders, hv)
		}
		return out
	case models.Validate:
		var v api.ValidateResponse
		if json.Unmarshal(body, &v) != nil || v.Stale {
			return unknown
		}
		return models.LockOutput{LogTimeNs: ms(v.LogTimeMs), Valid: v.Valid}
	}
	return unknown
}

// pauseGate holds a client's requests while it is paused.
type pauseGate struct {
	mu    sync.Mutex
	until time.Time
}

// pause freezes the client for d from now.
func (g *pauseGate) pause(d time.Duration) {
	g.mu.Lock()
	g.until = time.Now().Add(d)
	g.mu.Unlock()
}

// left is how long the client stays paused.
func (g *pauseGate) left() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return time.Until(g.until)
}

// wait returns once the client is not paused, or with ctx's error.
func (g *pauseGate) wait(ctx interface {
	Done() <-chan struct{}
	Err() error
}) error {
	for {
		d := g.left()
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
