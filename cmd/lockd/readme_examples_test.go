package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/node"
)

// readmePath is README.md from this package's directory.
const readmePath = "../../README.md"

// minREADMEExamples bounds from below the curl examples the test checks,
// so that a parsing change cannot make it check nothing.
const minREADMEExamples = 20

// TestREADMEExamples: goal — README.md's curl examples are what lockstep
// answers, so they cannot drift: every `curl` line of a ```sh block runs
// against a cluster started as `lockd dev` starts one, and its reply is
// checked against the comment under (or after) it. Method: per block, a
// cluster (the block's own `lockd dev ...` line, else one shared default
// `lockd dev`, both on free ports, no gRPC); shell variables and quoting as
// sh; each curl done in Go (its -X, -d, -H and -N); then a `# {...}` comment
// must match the reply in keys and in every concrete value ("…": any value,
// or any further members; "abc…": a string starting abc; lease ids,
// fingerprints, token ids and secrets, and log times match any value, and
// "9f0c…" then names the value for later lines), a `# NNN [code]` comment
// gives the status (and error code), and a curl with neither must answer
// 2xx. For a stream (-N) only its first line is compared: the events the
// README shows need traffic the block does not make. Blocks that start
// members of their own (TLS, a 3-process cluster) are not run.
func TestREADMEExamples(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	r := &readmeRun{t: t, m: &matcher{bound: map[string]string{}}}
	for _, block := range shBlocks(string(raw)) {
		r.block(block)
	}
	if r.checked < minREADMEExamples {
		t.Fatalf("checked %d curl examples, want at least %d: did the README or the parser change?", r.checked, minREADMEExamples)
	}
	t.Logf("checked %d curl examples", r.checked)
}

// readmeRun is the state of one pass over the README.
type readmeRun struct {
	t       *testing.T
	m       *matcher
	shared  *readmeCluster
	checked int
}

// step is a command line of a block and the comment lines right under it
// (a comment after a blank line heads what follows).
type step struct {
	line     rawLine
	comments []rawLine
}

// block runs one ```sh block.
func (r *readmeRun) block(lines []rawLine) {
	var steps []step
	curls := false
	attached := false // a comment line right under a command is about it
	for _, l := range lines {
		text := strings.TrimSpace(l.text)
		switch {
		case text == "":
			attached = false
		case strings.HasPrefix(text, "#"):
			if attached {
				steps[len(steps)-1].comments = append(steps[len(steps)-1].comments, l)
			}
		default:
			steps = append(steps, step{line: l})
			curls = curls || strings.HasPrefix(text, "curl ")
			attached = true
		}
	}
	if !curls {
		return
	}
	for _, s := range steps {
		if strings.Contains(s.line.text, "./lockd --id") {
			r.t.Logf("README:%d: block starts members of its own; not run", lines[0].n)
			return
		}
	}
	var cluster *readmeCluster
	vars := map[string]string{}
	for _, s := range steps {
		sh, err := splitSh(r.m.substitute(s.line.text), vars)
		if err != nil {
			r.t.Errorf("README:%d: %v", s.line.n, err)
			return
		}
		w := sh.words
		switch {
		case len(w) == 1 && regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`).MatchString(w[0]):
			name, value, _ := strings.Cut(w[0], "=")
			vars[name] = value
		case len(w) >= 2 && w[0] == "lockd" && w[1] == "dev":
			cluster = startREADMECluster(r.t, w[2:])
		case w[0] == "curl":
			if cluster == nil {
				if r.shared == nil {
					r.shared = startREADMECluster(r.t, nil)
				}
				cluster = r.shared
			}
			comments := []string{sh.comment}
			for _, c := range s.comments {
				comments = append(comments, strings.TrimPrefix(strings.TrimSpace(c.text), "#"))
			}
			r.curl(cluster, s.line, w[1:], comments)
		default:
			r.t.Logf("README:%d: not a curl line; not run: %s", s.line.n, strings.Join(w, " "))
		}
	}
}

// expectation is what an example's comments say of its reply.
type expectation struct {
	patterns []string // JSON patterns: the reply, or a stream's lines
	status   int      // 0: any 2xx
	code     api.Code // "" unless the comment names one
}

func expectationOf(comments []string) expectation {
	var e expectation
	for _, c := range comments {
		c = strings.TrimSpace(c)
		if p, ok := expectedJSON(c); ok {
			e.patterns = append(e.patterns, p)
			continue
		}
		fields := strings.Fields(c)
		if len(fields) == 0 || len(fields[0]) != 3 {
			continue
		}
		if n, err := strconv.Atoi(fields[0]); err == nil && n >= 100 && n < 600 {
			e.status = n
			if len(fields) > 1 && api.Code(fields[1]).HTTPStatus() == n && n != http.StatusInternalServerError {
				e.code = api.Code(fields[1])
			}
		}
	}
	return e
}

// curl runs one example and checks its reply.
func (r *readmeRun) curl(c *readmeCluster, line rawLine, args []string, comments []string) {
	t := r.t
	req, stream, err := c.request(args)
	if err != nil {
		t.Errorf("README:%d: %v", line.n, err)
		return
	}
	want := expectationOf(comments)
	r.checked++
	if stream {
		r.stream(line, req, want)
		return
	}
	if len(want.patterns) > 1 {
		t.Errorf("README:%d: %d replies under one example; give each its own curl line", line.n, len(want.patterns))
		return
	}
	// A token just made reaches the other members within milliseconds
	// (they apply it from the log): a 401 is retried unless expected.
	status, body, err := send(req, want.status != http.StatusUnauthorized)
	if err != nil {
		t.Errorf("README:%d: %v", line.n, err)
		return
	}
	switch {
	case want.status != 0 && status != want.status:
		t.Errorf("README:%d: %s\n  answered %d %s, the example says %d", line.n, line.text, status, body, want.status)
		return
	case want.status == 0 && status/100 != 2:
		t.Errorf("README:%d: %s\n  answered %d %s, want 2xx", line.n, line.text, status, body)
		return
	case want.code != "":
		var e api.Error
		if json.Unmarshal(body, &e) != nil || e.Code != want.code {
			t.Errorf("README:%d: %s\n  answered %d %s, the example says code %s", line.n, line.text, status, body, want.code)
		}
		return
	}
	if len(want.patterns) == 1 {
		r.compare(line, want.patterns[0], body)
	}
}

// stream checks the first line of a streamed reply (a watch) against the
// first pattern; the other patterns must parse.
func (r *readmeRun) stream(line rawLine, req *http.Request, want expectation) {
	t := r.t
	for _, p := range want.patterns[min(1, len(want.patterns)):] {
		if _, err := parsePattern(p); err != nil {
			t.Errorf("README:%d: %v", line.n, err)
		}
	}
	ctx, cancel := context.WithTimeout(req.Context(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Errorf("README:%d: %v", line.n, err)
		return
	}
	defer resp.Body.Close()
	first, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	if resp.StatusCode != http.StatusOK || err != nil {
		t.Errorf("README:%d: %s\n  answered %d %q (%v), want 200 and a line", line.n, line.text, resp.StatusCode, first, err)
		return
	}
	if len(want.patterns) > 0 {
		r.compare(line, want.patterns[0], first)
	}
}

// compare matches body against pattern.
func (r *readmeRun) compare(line rawLine, pattern string, body []byte) {
	want, err := parsePattern(pattern)
	if err != nil {
		r.t.Errorf("README:%d: %v", line.n, err)
		return
	}
	got, err := decodeReply(body)
	if err != nil {
		r.t.Errorf("README:%d: reply %q is not JSON: %v", line.n, body, err)
		return
	}
	if d := r.m.match("reply", "", want, got); d != "" {
		r.t.Errorf("README:%d: %s\n  %s\n  reply:   %s  example: %s", line.n, line.text, d, body, pattern)
	}
}

// send does req, again while the member says it did nothing and may do
// better later (503: an election, a shard changing hands; with retry401,
// 401: a token not applied there yet), and returns the last status and
// body.
func send(req *http.Request, retry401 bool) (int, []byte, error) {
	var body []byte
	for attempt := 0; ; attempt++ {
		if req.GetBody != nil {
			b, err := req.GetBody()
			if err != nil {
				return 0, nil, err
			}
			req.Body = b
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err
		}
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, nil, err
		}
		again := resp.StatusCode == http.StatusServiceUnavailable || retry401 && resp.StatusCode == http.StatusUnauthorized
		if !again || attempt == 20 {
			return resp.StatusCode, body, nil
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// readmeCluster is a lockd dev cluster for the README's examples and the
// URL each README address (its port: 7070...; the gateway's 7000) reaches.
type readmeCluster struct {
	bases map[string]string
}

// startREADMECluster starts the cluster `lockd dev args` would, on free
// ports and without gRPC, and waits until every member is ready, leads
// no more than its share of shards and, with ACLs, knows the admin token.
func startREADMECluster(t *testing.T, args []string) *readmeCluster {
	t.Helper()
	readme, err := parseDev(args)
	if err != nil {
		t.Fatalf("lockd dev %v: %v", args, err)
	}
	c, err := parseDev(append(slices.Clone(args), "--grpc-port", "0", "--gateway-addr", "127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	var peers []node.Peer
	for i := range c.nodes {
		peers = append(peers, node.Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: freePort(t), HTTPAddr: freePort(t)})
	}
	logger := slog.New(slog.DiscardHandler)
	d, err := startDevCluster(c, peers, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.stop(logger) })
	rc := &readmeCluster{bases: map[string]string{}}
	for i, m := range d.members {
		rc.bases[strconv.Itoa(readme.httpBase+i)] = m.URL()
	}
	if _, port, err := net.SplitHostPort(readme.gatewayAddr); err == nil && d.gateway != nil {
		rc.bases[port] = d.gateway.URL()
	}
	waitUntil(t, 60*time.Second, func() bool { return rc.settled(d, c.settings.acl.token()) })
	return rc
}

// settled: every member ready, each leading at most its share of the lock
// shards (so no leadership transfer is coming), and the ACL token known.
func (rc *readmeCluster) settled(d *devCluster, token string) bool {
	led := map[string]int{}
	for _, m := range d.members {
		if code, _, _ := get(m.URL()+api.PathReady, ""); code != http.StatusOK {
			return false
		}
		if token != "" {
			if code, _, _ := get(m.URL()+api.PathACLTokens, token); code != http.StatusOK {
				return false
			}
		}
	}
	var cr api.ClusterResponse
	if code, body, _ := get(d.members[0].URL()+api.PathCluster, ""); code != http.StatusOK || json.Unmarshal(body, &cr) != nil {
		return false
	}
	share := (len(cr.Shards) + len(d.members) - 1) / len(d.members)
	for _, s := range cr.Shards {
		if s.Leader == "" {
			return false
		}
		led[s.Leader]++
		if led[s.Leader] > share {
			return false
		}
	}
	return true
}

func get(u, token string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// request builds the request a curl command line (without "curl") makes,
// aimed at this cluster; stream is -N.
func (rc *readmeCluster) request(args []string) (req *http.Request, stream bool, err error) {
	method, target, body := "", "", ""
	hasBody := false
	var headers []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("curl %s needs a value", a)
			}
			i++
			return args[i], nil
		}
		switch {
		case a == "-s" || a == "-S" || a == "-sS":
		case a == "-N":
			stream = true
		case a == "-X":
			if method, err = next(); err != nil {
				return nil, false, err
			}
		case strings.HasPrefix(a, "-X"):
			method = a[2:]
		case a == "-d" || a == "--data":
			if body, err = next(); err != nil {
				return nil, false, err
			}
			hasBody = true
		case a == "-H":
			h, err := next()
			if err != nil {
				return nil, false, err
			}
			headers = append(headers, h)
		case strings.HasPrefix(a, "-"):
			return nil, false, fmt.Errorf("curl flag %s: the README examples test knows -s, -N, -X, -d and -H", a)
		case target != "":
			return nil, false, fmt.Errorf("curl with two URLs: %s and %s", target, a)
		default:
			target = a
		}
	}
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil, false, err
	}
	base, ok := rc.bases[u.Port()]
	if !ok || u.Scheme != "http" || (u.Hostname() != "localhost" && u.Hostname() != "127.0.0.1") {
		return nil, false, fmt.Errorf("curl to %s: not an address of the dev cluster", target)
	}
	if method == "" {
		method = http.MethodGet
		if hasBody {
			method = http.MethodPost
		}
	}
	var rd io.Reader
	if hasBody {
		rd = strings.NewReader(body)
	}
	req, err = http.NewRequest(method, base+u.RequestURI(), rd)
	if err != nil {
		return nil, false, err
	}
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return nil, false, fmt.Errorf("curl -H %q: want Name: value", h)
		}
		req.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	if hasBody {
		// What curl -d sends.
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return req, stream, nil
}
