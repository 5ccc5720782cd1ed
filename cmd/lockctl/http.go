package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/client"
)

// defaultEndpoints is the lockd dev cluster.
var defaultEndpoints = []string{"http://127.0.0.1:7070", "http://127.0.0.1:7071", "http://127.0.0.1:7072"}

// maxReplyBytes bounds a reply read from a server.
const maxReplyBytes = 4 << 20

// globals are the flags every command shares.
type globals struct {
	endpoints []string
	clientID  string
	timeout   time.Duration
	token     string
	output    string
	tls       tlsFlags
}

// envToken is where --token is read from when it is not given.
const envToken = "LOCKSTEP_TOKEN"

func (g *globals) register(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringSliceVar(&g.endpoints, "endpoints", defaultEndpoints, "lockstep HTTP endpoints (comma-separated); any member or a gateway")
	f.StringVar(&g.clientID, "client-id", "", "client id to hold locks as (default: lockctl-<host>-<pid>)")
	f.DurationVar(&g.timeout, "timeout", 10*time.Second, "time allowed per request (a waiting acquire adds its wait)")
	f.StringVar(&g.token, "token", os.Getenv(envToken), "ACL bearer token sent with every request (default $"+envToken+")")
	g.tls.register(root)
}

// endpointList normalises the endpoints to base URLs.
func (g *globals) endpointList() ([]string, error) {
	var out []string
	given, scheme := g.tls.endpoints(g.endpoints)
	for _, e := range given {
		e = strings.TrimRight(strings.TrimSpace(e), "/")
		if e == "" {
			continue
		}
		if !strings.Contains(e, "://") {
			e = scheme + "://" + e
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, usageError("--endpoints is empty")
	}
	return out, nil
}

// apiError is an error reply of the server.
type apiError struct {
	status int
	body   api.Error
}

func (e *apiError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.status, e.body.Code, e.body.Error)
}

// elsewhere: the member surely did nothing (no leader in time, or too
// busy to take the request), so the next endpoint may be asked.
func (e *apiError) elsewhere() bool {
	return e.body.Code.NotApplied()
}

// call sends one request, trying the endpoints in turn while a member is
// unreachable or answers unavailable or overloaded (surely not applied, so
// safe to send elsewhere). Any other answer ends the call: out gets a 200 reply, an
// *apiError carries the rest.
func call(ctx context.Context, g *globals, method, path string, body, out any, extra time.Duration) error {
	endpoints, err := g.endpointList()
	if err != nil {
		return err
	}
	var payload []byte
	if body != nil {
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
	}
	hc, err := g.tls.httpClient()
	if err != nil {
		return err
	}
	var last error
	for _, base := range endpoints {
		err := callOne(ctx, hc, base+path, method, g.token, payload, out, g.timeout+extra)
		var ae *apiError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &ae) && !ae.elsewhere():
			return err
		case ctx.Err() != nil:
			return err
		}
		last = err
	}
	return last
}

func callOne(ctx context.Context, hc *http.Client, url, method, token string, payload []byte, out any, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		return fmt.Errorf("read reply of %s: %w", url, err)
	}
	if client.PlainHTTPToTLS(resp.StatusCode, raw) {
		return errSpeaksTLS(url)
	}
	if resp.StatusCode != http.StatusOK {
		return replyError(resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode reply of %s: %w", url, err)
	}
	return nil
}

// errSpeaksTLS explains net/http's 400 to a plain HTTP request on a TLS
// port: the command line lacks the TLS flags (exit 2).
func errSpeaksTLS(url string) error {
	return usageError("%s: the server speaks TLS (HTTPS), not plain HTTP: give --cacert with the cluster's CA "+
		"(and --cert and --key if it requires a client certificate); endpoints without a scheme, and the default ones, "+
		"are then https", url)
}

// replyError decodes a non-200 reply; a body that is not an API error
// (a proxy's page) is kept as the message.
func replyError(status int, raw []byte) *apiError {
	ae := &apiError{status: status}
	if json.Unmarshal(raw, &ae.body) != nil || ae.body.Code == "" {
		ae.body = api.Error{Code: api.CodeInternal, Error: strings.TrimSpace(string(raw))}
	}
	return ae
}

// printJSON writes v indented, one document per reply.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("print reply: %w", err)
	}
	return nil
}

// failed wraps a request error for exit code 1.
func failed(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	if cycle, ok := deadlockCycle(err); ok {
		return &exitError{code: exitDeadlock, err: fmt.Errorf("%w (cycle by client id: %s)", err, strings.Join(cycle, " -> "))}
	}
	return &exitError{code: exitFailed, err: err}
}

// deadlockCycle reads the wait-for cycle of a deadlock refusal, from
// lockctl's own calls or the Go client's (lock).
func deadlockCycle(err error) ([]string, bool) {
	var ae *apiError
	if errors.As(err, &ae) && ae.body.Code == api.CodeDeadlock {
		return ae.body.Cycle, true
	}
	var ce *client.APIError
	if errors.As(err, &ce) && ce.Code == api.CodeDeadlock {
		return ce.Cycle, true
	}
	return nil, false
}
