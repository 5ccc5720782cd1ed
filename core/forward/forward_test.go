package forward

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/lockstep/lockstep/core/link"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/node"
)

// pipe is an in-process link.Link: calls to an address run the handlers
// registered on the pipe at that address, or fail as fail says.
type pipe struct {
	all      map[string]*pipe
	handlers map[link.Kind]link.Handler
	fail     error
}

var _ link.Link = (*pipe)(nil)

func newPipes(addrs ...string) map[string]*pipe {
	all := make(map[string]*pipe)
	for _, a := range addrs {
		all[a] = &pipe{all: all, handlers: make(map[link.Kind]link.Handler)}
	}
	return all
}

func (p *pipe) Handle(kind link.Kind, h link.Handler) { p.handlers[kind] = h }

func (p *pipe) Call(ctx context.Context, addr string, req link.Request) ([]byte, error) {
	if p.fail != nil {
		return nil, p.fail
	}
	to := p.all[addr]
	if to == nil {
		return nil, fmt.Errorf("%w: no member at %s", link.ErrNotSent, addr)
	}
	h := to.handlers[req.Kind]
	if h == nil {
		return nil, &link.RemoteError{Message: "no handler"}
	}
	return h(ctx, req)
}

// group answers forwards with a fixed reply or error and records them.
type group struct {
	reply []byte
	err   error
	got   [][]byte
	ri    node.ReadIndex
}

var _ ReadIndexGroup = (*group)(nil)

func (g *group) ServeForward(_ context.Context, cmd []byte) ([]byte, error) {
	g.got = append(g.got, append([]byte(nil), cmd...))
	return g.reply, g.err
}

func (g *group) ServeReadIndex() (node.ReadIndex, error) { return g.ri, g.err }

// TestForwardCarriesCommandAndAnswer: goal — a forwarded command reaches
// the leader's group byte for byte, the group's answer comes back byte for
// byte, groups are kept apart, and a group not running on the leader's
// member answers unavailable (surely not applied). Method: two members on
// in-process pipes, two groups served on one.
func TestForwardCarriesCommandAndAnswer(t *testing.T) {
	pipes := newPipes("a", "b")
	fa, fb := New(pipes["a"], nil), New(pipes["b"], nil)
	g1, g2 := &group{reply: []byte("one")}, &group{reply: []byte("two")}
	fb.Serve(1, g1)
	stop := fb.Serve(2, g2)
	leader := node.Peer{ID: "b", RaftAddr: "b"}
	ctx := context.Background()
	for _, tc := range []struct {
		g    uint64
		want string
		grp  *group
	}{{1, "one", g1}, {2, "two", g2}} {
		out, err := fa.For(tc.g).Forward(ctx, leader, []byte{3, byte(tc.g)})
		if err != nil || string(out) != tc.want {
			t.Fatalf("group %d: %q %v", tc.g, out, err)
		}
		if len(tc.grp.got) != 1 || string(tc.grp.got[0]) != string([]byte{3, byte(tc.g)}) {
			t.Fatalf("group %d received %q", tc.g, tc.grp.got)
		}
	}
	stop()
	if _, err := fa.For(2).Forward(ctx, leader, []byte{3}); !errors.Is(err, node.ErrUnavailable) {
		t.Fatalf("group no longer served: %v, want unavailable", err)
	}
	g1.ri = node.ReadIndex{Commit: 90, Command: 88}
	if ri, err := fa.For(1).ReadIndex(ctx, leader); err != nil || ri != g1.ri {
		t.Fatalf("read index: %+v %v", ri, err)
	}
}

// TestForwardErrorClasses: goal — the leader's error class reaches the
// forwarding member unchanged, so its answer is as truthful as the
// leader's; an unclassified error is no definite class; a forward that
// surely never left is unavailable, one whose connection broke after
// sending is not. Method: every class through a pipe, then failing pipes.
func TestForwardErrorClasses(t *testing.T) {
	pipes := newPipes("a", "b")
	fa, fb := New(pipes["a"], nil), New(pipes["b"], nil)
	g := &group{}
	fb.Serve(1, g)
	leader := node.Peer{ID: "b", RaftAddr: "b"}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"not leader", node.ErrNotLeader, node.ErrNotLeader},
		{"unavailable", fmt.Errorf("%w: enqueue timeout", node.ErrUnavailable), node.ErrUnavailable},
		{"shutting down", node.ErrShutdown, node.ErrUnavailable},
		{"corrupt command", fmt.Errorf("%w: truncated", lock.ErrCorrupt), lock.ErrInvalid},
		{"invalid command", lock.ErrInvalid, lock.ErrInvalid},
		{"outcome unknown", fmt.Errorf("%w: leadership lost", node.ErrIndeterminate), node.ErrIndeterminate},
	} {
		g.err = tc.err
		if _, err := fa.For(1).Forward(context.Background(), leader, nil); !errors.Is(err, tc.want) {
			t.Errorf("%s: leader %v -> follower %v, want %v", tc.name, tc.err, err, tc.want)
		}
	}
	g.err = errors.New("boom")
	if _, err := fa.For(1).Forward(context.Background(), leader, nil); errors.Is(err, node.ErrUnavailable) || errors.Is(err, node.ErrNotLeader) {
		t.Errorf("an unclassified error decoded as definite: %v", err)
	}
	if _, err := decodeReply(nil); !errors.Is(err, node.ErrIndeterminate) {
		t.Errorf("empty reply: %v", err)
	}

	pipes["a"].fail = fmt.Errorf("%w: refused", link.ErrNotSent)
	if _, err := fa.For(1).Forward(context.Background(), leader, nil); !errors.Is(err, node.ErrUnavailable) {
		t.Errorf("never sent: %v, want unavailable", err)
	}
	pipes["a"].fail = fmt.Errorf("%w: reset", link.ErrConnLost)
	if _, err := fa.For(1).Forward(context.Background(), leader, nil); err == nil || errors.Is(err, node.ErrUnavailable) || errors.Is(err, node.ErrNotLeader) {
		t.Errorf("lost after sending: %v, want neither definite class", err)
	}
	if _, err := fa.For(1).ReadIndex(context.Background(), leader); !errors.Is(err, node.ErrUnavailable) {
		t.Errorf("read index over a broken link: %v, want unavailable (a query changes nothing)", err)
	}
}
