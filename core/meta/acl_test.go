package meta

import (
	"testing"

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
		{Command{Op: OpACLDeleteToken, ACLCommand: ACLCommand{TokenID: root.ID}}, false, 3}, // last admin
		{Command{Op: OpACLDeleteToken, ACLCommand: ACLCommand{TokenID: "0000000000000000"}}, true, 3},
		{Command{Op: OpACLPutToken}, false, 3},
	}
	for i, st := range steps {
		err := s.Apply(st.cmd)
		if (err == nil) != st.ok || s.Version != st.version {
			t.Fatalf("step %d %s: err %v version %d, want ok=%v version %d", i, st.cmd.Op, err, s.Version, st.ok, st.version)
		}
	}
	b, err := s.encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := decode(b)
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
	b, _ = broken.encode()
	if _, err := decode(b); err == nil {
		t.Fatal("a snapshot with a malformed token decoded")
	}
}
