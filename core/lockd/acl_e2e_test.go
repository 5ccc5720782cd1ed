package lockd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/gateway"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/node"
	lockstepv1 "github.com/lockstep/lockstep/proto/lockstep/v1"
)

const rootSecret = "root-secret-for-tests-0123"

// aclCluster is three members started with --acl-bootstrap-token, each
// serving HTTP and gRPC.
type aclCluster struct {
	t       *testing.T
	opts    []lockd.Options
	members []*lockd.Member
	grpc    []lockstepv1.LockClient
}

func startACLCluster(t *testing.T) *aclCluster {
	t.Helper()
	var peers []node.Peer
	for i := range 3 {
		peers = append(peers, node.Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: freeAddr(t)})
	}
	base := t.TempDir()
	c := &aclCluster{t: t, members: make([]*lockd.Member, 3), grpc: make([]lockstepv1.LockClient, 3)}
	for i := range 3 {
		c.opts = append(c.opts, lockd.Options{
			ID: peers[i].ID, RaftAddr: peers[i].RaftAddr, HTTPAddr: freeAddr(t), GRPCAddr: freeAddr(t),
			DataDir: filepath.Join(base, peers[i].ID), Peers: peers, Bootstrap: true, Shards: 2,
			Lock: lock.DefaultConfig(), Logger: slog.New(slog.DiscardHandler), SpreadInterval: -1,
			ACLBootstrapToken: rootSecret,
		})
	}
	for i := range 3 {
		c.start(i)
	}
	c.waitReady()
	return c
}

func (c *aclCluster) start(i int) {
	m, err := lockd.Start(c.opts[i])
	if err != nil {
		c.t.Fatal(err)
	}
	c.members[i] = m
	c.t.Cleanup(func() { stopMember(c.t, m) })
	conn, err := grpc.NewClient(m.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = conn.Close() })
	c.grpc[i] = lockstepv1.NewLockClient(conn)
}

// waitReady waits for every shard's leader and for ACLs on every member.
func (c *aclCluster) waitReady() {
	waitFor(c.t, func() bool {
		for _, m := range c.members {
			for s := 1; s <= 2; s++ {
				if n := m.Shard(s); n == nil {
					return false
				} else if _, ok := n.Leader(); !ok {
					return false
				}
			}
			if m.Host.Meta().ACL() == nil {
				return false
			}
		}
		return true
	})
}

func (c *aclCluster) url(i int) string { return "http://" + c.members[i].Addr() }

// call sends one HTTP request with a bearer token ("" for none).
func call(t *testing.T, method, u, token string, body, out any) (int, api.Error, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, u, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var e api.Error
	if resp.StatusCode == http.StatusOK {
		if out != nil {
			if err := json.Unmarshal(raw, out); err != nil {
				t.Fatalf("decode %s: %v", raw, err)
			}
		}
	} else if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("decode error %s: %v", raw, err)
	}
	return resp.StatusCode, e, resp.Header
}

func (c *aclCluster) acquire(i int, token, resource, client string, wait int64) (api.AcquireResponse, int, api.Error, http.Header) {
	var out api.AcquireResponse
	code, e, h := call(c.t, http.MethodPost, c.url(i)+api.PathAcquire, token,
		api.AcquireRequest{Resource: resource, ClientID: client, TTLMs: 60_000, WaitMs: wait}, &out)
	return out, code, e, h
}

func (c *aclCluster) status(i int, resource string) api.StatusResponse {
	var out api.StatusResponse
	if code, e, _ := call(c.t, http.MethodGet, c.url(i)+api.PathStatus+"?resource="+resource, rootSecret, nil, &out); code != http.StatusOK {
		c.t.Fatalf("status %s: %d %+v", resource, code, e)
	}
	out.LogTimeMs = 0
	for j := range out.Holders {
		out.Holders[j].ExpiresInMs = 0
	}
	return out
}

func (c *aclCluster) createToken(secret string, ns []string, rights ...string) api.Token {
	var out api.Token
	code, e, _ := call(c.t, http.MethodPost, c.url(0)+api.PathACLToken, rootSecret,
		api.Token{Secret: secret, Namespaces: ns, Rights: rights}, &out)
	if code != http.StatusOK || out.Secret != secret || out.ID == "" {
		c.t.Fatalf("create token: %d %+v %+v", code, e, out)
	}
	return out
}

// everywhere waits until every member answers a status of resource with
// token with want.
func (c *aclCluster) everywhere(token, resource string, want int) {
	c.t.Helper()
	for i := range c.members {
		waitFor(c.t, func() bool {
			code, _, _ := call(c.t, http.MethodGet, c.url(i)+api.PathStatus+"?resource="+resource, token, nil, nil)
			return code == want
		})
	}
}

func withToken(token string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
}

func grpcCode(err error) codes.Code { return grpcstatus.Code(err) }

// TestACLRefusesOtherNamespaces: goal — with ACLs on, a request without a
// token is 401 unauthenticated, a token for namespace a may not acquire,
// release, renew or read b:* (403 permission_denied) over HTTP or gRPC,
// and nothing changes when it is refused; a token an admin creates (or
// deletes) takes effect on every member; force release needs release_any.
// Method: three members bootstrapped with a root token; the admin API
// makes tokens for a and b; every refusal is checked against b:1's status.
func TestACLRefusesOtherNamespaces(t *testing.T) {
	c := startACLCluster(t)
	if _, code, e, _ := c.acquire(0, "", "a:1", "x", 0); code != http.StatusUnauthorized || e.Code != api.CodeUnauthenticated {
		t.Fatalf("no token: %d %+v", code, e)
	}
	if _, code, e, _ := c.acquire(0, "not-a-known-token-000", "a:1", "x", 0); code != http.StatusUnauthorized || e.Code != api.CodeUnauthenticated {
		t.Fatalf("unknown token: %d %+v", code, e)
	}
	if _, err := c.grpc[1].Acquire(context.Background(), &lockstepv1.AcquireRequest{Resource: "a:1", ClientId: "x", TtlMs: 1000}); grpcCode(err) != codes.Unauthenticated {
		t.Fatalf("gRPC without token: %v", err)
	}
	const aSecret, bSecret = "token-for-namespace-a", "token-for-namespace-b"
	aTok := c.createToken(aSecret, []string{"a"}, "acquire", "read")
	c.createToken(bSecret, []string{"b"}, "acquire", "read")
	c.everywhere(aSecret, "a:1", http.StatusOK)
	c.everywhere(bSecret, "b:1", http.StatusOK)

	held, code, e, _ := c.acquire(1, bSecret, "b:1", "owner-b", 0)
	if code != http.StatusOK || !held.Granted {
		t.Fatalf("b acquires b:1: %d %+v", code, e)
	}
	before := c.status(2, "b:1")
	for i := range c.members {
		if _, code, e, _ := c.acquire(i, aSecret, "b:2", "intruder", 0); code != http.StatusForbidden || e.Code != api.CodePermissionDenied {
			t.Fatalf("member %d: a acquires b:2: %d %+v", i, code, e)
		}
		code, e, _ := call(t, http.MethodPost, c.url(i)+api.PathRelease, aSecret, api.ReleaseRequest{Resource: "b:1", LeaseID: held.LeaseID}, nil)
		if code != http.StatusForbidden || e.Code != api.CodePermissionDenied {
			t.Fatalf("member %d: a releases b:1: %d %+v", i, code, e)
		}
		code, e, _ = call(t, http.MethodPost, c.url(i)+api.PathRenew, aSecret, api.RenewRequest{Resource: "b:1", LeaseID: held.LeaseID, TTLMs: 5}, nil)
		if code != http.StatusForbidden || e.Code != api.CodePermissionDenied {
			t.Fatalf("member %d: a renews b:1: %d %+v", i, code, e)
		}
		code, e, _ = call(t, http.MethodGet, c.url(i)+api.PathStatus+"?resource=b:1", aSecret, nil, nil)
		if code != http.StatusForbidden || e.Code != api.CodePermissionDenied {
			t.Fatalf("member %d: a reads b:1: %d %+v", i, code, e)
		}
		ctx := withToken(aSecret)
		g := c.grpc[i]
		if _, err := g.Acquire(ctx, &lockstepv1.AcquireRequest{Resource: "b:2", ClientId: "intruder", TtlMs: 1000}); grpcCode(err) != codes.PermissionDenied {
			t.Fatalf("member %d: gRPC acquire b:2: %v", i, err)
		}
		if _, err := g.Release(ctx, &lockstepv1.ReleaseRequest{Resource: "b:1", LeaseId: held.LeaseID}); grpcCode(err) != codes.PermissionDenied {
			t.Fatalf("member %d: gRPC release b:1: %v", i, err)
		}
		if _, err := g.Renew(ctx, &lockstepv1.RenewRequest{Resource: "b:1", LeaseId: held.LeaseID, TtlMs: 5}); grpcCode(err) != codes.PermissionDenied {
			t.Fatalf("member %d: gRPC renew b:1: %v", i, err)
		}
		if _, err := g.Status(ctx, &lockstepv1.StatusRequest{Resource: "b:1"}); grpcCode(err) != codes.PermissionDenied {
			t.Fatalf("member %d: gRPC status b:1: %v", i, err)
		}
		if _, err := g.Acquire(ctx, &lockstepv1.AcquireRequest{Resource: fmt.Sprintf("a:g%d", i), ClientId: "a", TtlMs: 60_000}); err != nil {
			t.Fatalf("member %d: gRPC acquire in its own namespace: %v", i, err)
		}
		// Streams: the streaming acquire and KeepAlive run the same checks.
		as, err := g.AcquireStream(ctx, &lockstepv1.AcquireRequest{Resource: "b:1", ClientId: "intruder", TtlMs: 1000, WaitMs: 5000})
		if err == nil {
			_, err = as.Recv()
		}
		if grpcCode(err) != codes.PermissionDenied {
			t.Fatalf("member %d: gRPC streaming acquire of b:1: %v", i, err)
		}
		ka, err := g.KeepAlive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := ka.Send(&lockstepv1.KeepAliveRequest{Resource: "b:1", LeaseId: held.LeaseID, TtlMs: 5}); err != nil {
			t.Fatal(err)
		}
		resp, err := ka.Recv()
		if err != nil || api.Code(resp.GetError().GetCode()) != api.CodePermissionDenied {
			t.Fatalf("member %d: KeepAlive of b:1: %v %v", i, resp, err)
		}
		_ = ka.CloseSend()
	}
	// Watches: read in the watched namespace; a prefix that may span
	// namespaces needs read on all of them.
	for _, q := range []string{"resource=b:1", "resource=b:&prefix=true", "resource=&prefix=true", "resource=a&prefix=true"} {
		if code := watchCode(t, c.url(1)+api.PathWatch+"?"+q, aSecret); code != http.StatusForbidden {
			t.Fatalf("a watches %s: %d", q, code)
		}
	}
	for _, q := range []string{"resource=a:1", "resource=a:&prefix=true"} {
		if code := watchCode(t, c.url(1)+api.PathWatch+"?"+q, aSecret); code != http.StatusOK {
			t.Fatalf("a watches %s: %d", q, code)
		}
	}
	if code := watchCode(t, c.url(1)+api.PathWatch+"?resource=&prefix=true", rootSecret); code != http.StatusOK {
		t.Fatalf("root watches everything: %d", code)
	}
	ws, err := c.grpc[2].Watch(withToken(aSecret), &lockstepv1.WatchRequest{Resource: "b:1"})
	if err == nil {
		_, err = ws.Recv()
	}
	if grpcCode(err) != codes.PermissionDenied {
		t.Fatalf("gRPC watch of b:1: %v", err)
	}
	if after := c.status(2, "b:1"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("refusals changed b:1:\n before %+v\n after  %+v", before, after)
	}
	if st := c.status(0, "b:2"); len(st.Holders) != 0 {
		t.Fatalf("refused acquire left holders on b:2: %+v", st)
	}

	// release_any: b's token lacks it, root has it.
	code, e, _ = call(t, http.MethodPost, c.url(0)+api.PathForceRelease, bSecret, api.ForceReleaseRequest{Resource: "b:1"}, nil)
	if code != http.StatusForbidden {
		t.Fatalf("force release without release_any: %d %+v", code, e)
	}
	var fr api.ForceReleaseResponse
	if code, e, _ := call(t, http.MethodPost, c.url(0)+api.PathForceRelease, rootSecret, api.ForceReleaseRequest{Resource: "b:1"}, &fr); code != http.StatusOK || fr.Released != 1 {
		t.Fatalf("force release: %d %+v %+v", code, e, fr)
	}

	// Deleting a's token: every member refuses it.
	if code, e, _ := call(t, http.MethodPost, c.url(2)+api.PathACLTokenDelete, rootSecret, api.TokenDelete{ID: aTok.ID}, nil); code != http.StatusOK {
		t.Fatalf("delete token: %d %+v", code, e)
	}
	c.everywhere(aSecret, "a:1", http.StatusUnauthorized)
	// Only an admin manages tokens.
	if code, _, _ := call(t, http.MethodGet, c.url(0)+api.PathACLTokens, bSecret, nil, nil); code != http.StatusForbidden {
		t.Fatalf("non-admin lists tokens: %d", code)
	}
	var list api.TokenList
	if code, _, _ := call(t, http.MethodGet, c.url(0)+api.PathACLTokens, rootSecret, nil, &list); code != http.StatusOK || len(list.Tokens) != 2 {
		t.Fatalf("tokens: %d %+v", code, list)
	}
	for _, tok := range list.Tokens {
		if tok.Secret != "" {
			t.Fatalf("listing shows a secret: %+v", tok)
		}
	}
}

// TestACLTokensSurviveRestart: goal — tokens live in the metadata group's
// snapshots and log: a token made before a snapshot and one made after
// both work after every member restarts without the bootstrap flag.
// Method: snapshot the metadata group between the two creations, stop
// all three members, start them again from their data.
func TestACLTokensSurviveRestart(t *testing.T) {
	c := startACLCluster(t)
	c.createToken("in-the-snapshot-0001", []string{"s"}, "read")
	c.everywhere("in-the-snapshot-0001", "s:1", http.StatusOK)
	for _, m := range c.members {
		if err := m.Host.Meta().Snapshot(); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
	}
	c.createToken("in-the-log-only-0002", []string{"l"}, "read")
	c.everywhere("in-the-log-only-0002", "l:1", http.StatusOK)
	for i, m := range c.members {
		stopMember(t, m)
		c.opts[i].ACLBootstrapToken = ""
	}
	for i := range c.members {
		c.start(i)
	}
	c.waitReady()
	c.everywhere("in-the-snapshot-0001", "s:1", http.StatusOK)
	c.everywhere("in-the-log-only-0002", "l:1", http.StatusOK)
	c.everywhere("in-the-log-only-0002", "s:1", http.StatusForbidden)
	c.everywhere("", "s:1", http.StatusUnauthorized)
}

// TestQuotasAnswer429AndChangeNothing: goal — each quota (namespace held,
// namespace queued, per-client held, acquires per second) refuses the
// acquire past it with 429 resource_exhausted and a Retry-After, in a
// message that names the quota hit (namespace or client, which limit,
// its value), and the refused resource's status is identical before and
// after. Method: quotas
// set through the admin API, then one acquire too many for each. Counts
// are per lock shard, so the resources of a count share a hash tag.
func TestQuotasAnswer429AndChangeNothing(t *testing.T) {
	c := startACLCluster(t)
	setQuota := func(q api.Quota) {
		if code, e, _ := call(t, http.MethodPost, c.url(1)+api.PathACLQuota, rootSecret, q, nil); code != http.StatusOK {
			t.Fatalf("set quota %+v: %d %+v", q, code, e)
		}
		waitFor(t, func() bool {
			got, ok := c.members[0].Host.Meta().ACL().Quota(q.Namespace)
			return ok && api.Quota(got) == q
		})
	}
	refused := func(what, resource, client string, wait int64, says ...string) {
		t.Helper()
		before := c.status(0, resource)
		_, code, e, h := c.acquire(0, rootSecret, resource, client, wait)
		if code != http.StatusTooManyRequests || e.Code != api.CodeResourceExhausted || h.Get("Retry-After") == "" {
			t.Fatalf("%s: %d %+v Retry-After %q", what, code, e, h.Get("Retry-After"))
		}
		for _, want := range says {
			if !strings.Contains(e.Error, want) {
				t.Errorf("%s: message %q does not say %q", what, e.Error, want)
			}
		}
		if after := c.status(0, resource); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("%s changed %s:\n before %+v\n after  %+v", what, resource, before, after)
		}
	}
	granted := func(resource, client string) {
		t.Helper()
		if out, code, e, _ := c.acquire(0, rootSecret, resource, client, 0); code != http.StatusOK || !out.Granted {
			t.Fatalf("acquire %s: %d %+v %+v", resource, code, e, out)
		}
	}

	setQuota(api.Quota{Namespace: "h", MaxHeld: 2})
	granted("h:{t}1", "x")
	granted("h:{t}2", "y")
	refused("namespace max_held", "h:{t}3", "z", 0, `namespace "h"`, "max_held of 2")
	var many api.AcquireManyResponse
	before := c.status(0, "h:{t}4")
	code, e, h := call(t, http.MethodPost, c.url(0)+api.PathAcquireMany, rootSecret,
		api.AcquireManyRequest{Resources: []string{"h:{t}4", "h:{t}5"}, ClientID: "m", TTLMs: 60_000}, &many)
	if code != http.StatusTooManyRequests || e.Code != api.CodeResourceExhausted || h.Get("Retry-After") == "" ||
		!strings.Contains(e.Error, `namespace "h"`) || !strings.Contains(e.Error, "max_held of 2") {
		t.Fatalf("acquire_many past max_held: %d %+v", code, e)
	}
	if after := c.status(0, "h:{t}4"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("refused acquire_many changed h:{t}4: %+v", after)
	}

	setQuota(api.Quota{Namespace: "q", MaxQueued: 1})
	granted("q:1", "holder")
	waiter := make(chan int, 1)
	go func() {
		_, code, _, _ := c.acquire(0, rootSecret, "q:1", "waiter", 20_000)
		waiter <- code
	}()
	waitFor(t, func() bool { return len(c.status(0, "q:1").Queue) == 1 })
	refused("namespace max_queued", "q:1", "second-waiter", 20_000, `namespace "q"`, "max_queued of 1")

	code, e, _ = call(t, http.MethodPost, c.url(0)+api.PathAcquireMany, rootSecret,
		api.AcquireManyRequest{Resources: []string{"h:{t}6", "q:{t}6"}, ClientID: "m", TTLMs: 60_000}, &many)
	if code != http.StatusBadRequest || e.Code != api.CodeInvalidArgument {
		t.Fatalf("acquire_many over two namespaces with quotas: %d %+v", code, e)
	}

	setQuota(api.Quota{Namespace: "c", ClientMaxHeld: 1})
	granted("c:{t}1", "greedy")
	refused("client_max_held", "c:{t}2", "greedy", 0, `client "greedy"`, `namespace "c"`, "client_max_held of 1")
	granted("c:{t}2", "modest")

	setQuota(api.Quota{Namespace: "r", AcquiresPerSec: 0.01, Burst: 1})
	granted("r:1", "x")
	refused("acquires_per_sec", "r:2", "x", 0, `namespace "r"`, "acquires_per_sec")

	// The waiter is still queued; releasing the holder grants it.
	var st api.StatusResponse
	call(t, http.MethodGet, c.url(0)+api.PathStatus+"?resource=q:1", rootSecret, nil, &st)
	fr := api.ForceReleaseResponse{}
	if code, e, _ := call(t, http.MethodPost, c.url(0)+api.PathForceRelease, rootSecret, api.ForceReleaseRequest{Resource: "q:1"}, &fr); code != http.StatusOK {
		t.Fatalf("force release: %d %+v", code, e)
	}
	select {
	case code := <-waiter:
		if code != http.StatusOK {
			t.Fatalf("waiter: %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("waiter never answered")
	}
}

// TestGatewayPassesTokens: goal — the gateway relays the Authorization
// header, so the member that gets the request checks the caller's token:
// no token 401, a's token on b:* 403, on a:* 200; the same for a watch,
// relayed as a stream. Method: a gateway in front of an ACL cluster.
func TestGatewayPassesTokens(t *testing.T) {
	c := startACLCluster(t)
	const aSecret = "token-for-namespace-a"
	c.createToken(aSecret, []string{"a"}, "acquire")
	c.everywhere(rootSecret, "a:1", http.StatusOK)
	for i := range c.members {
		waitFor(t, func() bool {
			_, code, _, _ := c.acquire(i, aSecret, "a:probe", fmt.Sprint(i), 0)
			return code == http.StatusOK
		})
	}
	cfg := gateway.DefaultConfig()
	cfg.Join, cfg.HTTPAddr = []string{c.members[0].Addr(), c.members[1].Addr()}, "127.0.0.1:0"
	g, err := gateway.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = g.Stop(ctx)
	})
	via := func(token, resource string) int {
		code, _, _ := call(t, http.MethodPost, "http://"+g.Addr()+api.PathAcquire, token,
			api.AcquireRequest{Resource: resource, ClientID: "gw", TTLMs: 60_000}, nil)
		return code
	}
	if code := via("", "a:gw"); code != http.StatusUnauthorized {
		t.Fatalf("no token through the gateway: %d", code)
	}
	if code := via(aSecret, "b:gw"); code != http.StatusForbidden {
		t.Fatalf("a's token on b:gw through the gateway: %d", code)
	}
	if code := via(aSecret, "a:gw"); code != http.StatusOK {
		t.Fatalf("a's token on a:gw through the gateway: %d", code)
	}
	// Watches are relayed as streams with the header too: a's token has
	// no read right.
	for token, want := range map[string]int{"": http.StatusUnauthorized, aSecret: http.StatusForbidden, rootSecret: http.StatusOK} {
		if code := watchCode(t, "http://"+g.Addr()+api.PathWatch+"?resource=a:gw", token); code != want {
			t.Fatalf("watch a:gw through the gateway with token %q: %d, want %d", token, code, want)
		}
	}
}

// watchCode is the status a watch request starts with; an open stream is
// closed at once.
func watchCode(t *testing.T, u, token string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode
}
