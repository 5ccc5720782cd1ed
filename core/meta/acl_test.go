package meta

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/lockstep/lockstep/core/acl"
)

// TestACLCommands: goal — ACL commands change the policy through Apply,
// bump the version only on a change, refuse what the policy refuses, and
// the policy survives the snapshot encoding (hashes only, no secret).
// Method: a scripted sequence, then encode/decode.
func TestACLCommands(t *testing.T) {
	root, err := acl.NewToken("root-secret-0123456789", "root", []string{acl.AllNamespaces}, []acl.Right{acl.RightAdmin})
	if err != nil {
		t.Fatal(err)
	}
	user, err := acl.NewToken("user-secret-0123456789", "", []string{"a"}, []acl.Right{acl.RightAcquire})
	if err != nil {
		t.Fatal(err)
	}
	var s State
	steps := []struct {
		cmd     Command
		ok      bool
		version uint64
	}{
		{Command{Op: OpACLPutToken, ACLCommand: ACLCommand{Token: &user}}, false, 0}, // not bootstrapped
		{Command{Op: OpACLBootstrap, ACLCommand: ACLCommand{Token: &root}}, true, 1},
		{Command{Op: OpACLBootstrap, ACLCommand: ACLCommand{Token: &root}}, true, 1},
		{Command{Op: OpACLBootstrap, ACLCommand: ACLCommand{Token: &user}}, false, 1},
		{Command{Op: OpACLPutToken, ACLCommand: ACLCommand{Token: &user}}, true, 2},
		{Command{Op: OpACLPutQuota, ACLCommand: ACLCommand{Quota: &acl.Quota{Namespace: "a", MaxHeld: 1}}}, true, 3},
		{Command{Op: OpACLDeleteToken, ACLCommand: ACLCommand{TokenID: root.ID}}, false, 3},            // last admin
		{Command{Op: OpACLDeleteToken, ACLCommand: ACLCommand{TokenID: "0000000000000000"}}, false, 3}, // not found
		{Command{Op: OpACLPutToken}, false, 3},
	}
	for i, st := range steps {
		err := s.Apply(st.cmd)
		if (err == nil) != st.ok || s.Version != st.version {
			t.Fatalf("step %d %s: err %v version %d, want ok=%v version %d", i, st.cmd.Op, err, s.Version, st.ok, st.version)
		}
	}
	b, err := encode(s, 7)
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.ACL.Authorize("user-secret-0123456789", acl.RightAcquire, "a:1"); err != nil {
		t.Fatalf("restored policy: %v", err)
	}
	if q, ok := back.ACL.Quota("a"); !ok || q.MaxHeld != 1 {
		t.Fatalf("restored quota %+v", q)
	}
	broken := back.Clone()
	broken.ACL = &acl.Policy{Tokens: []acl.Token{{ID: "x"}}}
	b, _ = encode(broken, 7)
	if _, _, err := decode(b); err == nil {
		t.Fatal("a snapshot with a malformed token decoded")
	}
}

// TestACLRefusalsKeepTheirKind: goal — a refused ACL command fails with
// one plain sentence (no "command refused" prefix, said once) that keeps
// its kind (not found, failed precondition) both where the leader applies
// it and where a follower decodes the leader's forwarded reply, and is
// never retried (Refused). Method: apply the refused commands to an fsm
// as raft would, then pass each error through the forward reply.
func TestACLRefusalsKeepTheirKind(t *testing.T) {
	root, err := acl.NewToken("root-secret-0123456789", "root", []string{acl.AllNamespaces}, []acl.Right{acl.RightAdmin})
	if err != nil {
		t.Fatal(err)
	}
	f := &fsm{changed: make(chan struct{})}
	apply := func(cmd Command) error {
		b, _ := json.Marshal(cmd)
		if err, _ := f.Apply(&raft.Log{Type: raft.LogCommand, Index: 1, Data: b}).(error); err != nil {
			return err
		}
		return nil
	}
	if err := apply(Command{Op: OpACLBootstrap, ACLCommand: ACLCommand{Token: &root}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		cmd  Command
		kind error
		says string
	}{
		{Command{Op: OpACLDeleteToken, ACLCommand: ACLCommand{TokenID: "0123456789abcdef"}}, acl.ErrNotFound, "0123456789abcdef"},
		{Command{Op: OpACLDeleteToken, ACLCommand: ACLCommand{TokenID: root.ID}}, acl.ErrFailedPrecondition, "last admin token"},
	}
	for _, tc := range cases {
		local := apply(tc.cmd)
		b, _ := json.Marshal(replyOf(0, local))
		_, forwarded := decodeReply(b)
		for where, err := range map[string]error{"leader": local, "follower": forwarded} {
			msg := fmt.Sprint(err)
			if !errors.Is(err, tc.kind) || !Refused(err) || strings.Contains(msg, "refused") ||
				strings.Count(msg, tc.says) != 1 || strings.Contains(msg, "meta:") {
				t.Errorf("%s on the %s: %q (kind %v, refused %v), want one sentence of kind %v saying %q once",
					tc.cmd.Op, where, msg, errors.Is(err, tc.kind), Refused(err), tc.kind, tc.says)
			}
		}
	}
}
