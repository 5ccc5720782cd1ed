package acl

import (
	"errors"
	"testing"
)

func mustToken(t *testing.T, secret string, ns []string, rights ...Right) Token {
	t.Helper()
	tok, err := NewToken(secret, "", ns, rights)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestAuthorize: goal — a token reaches only its namespaces and rights, a
// missing or unknown token is unauthenticated, a nil policy allows all.
// Method: a table over (token, right, resource).
func TestAuthorize(t *testing.T) {
	root := mustToken(t, "root-secret-0123456789", []string{AllNamespaces}, RightAdmin, RightAcquire, RightRead)
	p, err := (*Policy)(nil).Bootstrap(root)
	if err != nil {
		t.Fatal(err)
	}
	p, err = p.PutToken(mustToken(t, "a-secret-0123456789", []string{"a"}, RightAcquire, RightRead))
	if err != nil {
		t.Fatal(err)
	}
	p, err = p.PutToken(mustToken(t, "reader-0123456789", []string{"a", "b"}, RightRead))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		secret   string
		right    Right
		resource string
		want     error
	}{
		{"a-secret-0123456789", RightAcquire, "a:1", nil},
		{"a-secret-0123456789", RightAcquire, "b:1", ErrPermissionDenied},
		{"a-secret-0123456789", RightRead, "b:1", ErrPermissionDenied},
		{"a-secret-0123456789", RightAcquire, "a", ErrPermissionDenied}, // namespace ""
		{"a-secret-0123456789", RightAdmin, "", ErrPermissionDenied},
		{"reader-0123456789", RightRead, "b:x", nil},
		{"reader-0123456789", RightAcquire, "a:1", ErrPermissionDenied},
		{"root-secret-0123456789", RightAcquire, "zzz:1", nil},
		{"", RightRead, "a:1", ErrUnauthenticated},
		{"wrong-secret-0123456789", RightRead, "a:1", ErrUnauthenticated},
	}
	for _, c := range cases {
		err := p.Authorize(c.secret, c.right, c.resource)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s %s %s: %v, want %v", c.secret, c.right, c.resource, err, c.want)
		}
	}
	if err := (*Policy)(nil).Authorize("", RightAdmin); err != nil {
		t.Fatalf("ACLs off: %v", err)
	}
	if err := p.Authorize("a-secret-0123456789", RightAcquire, "a:1", "b:2"); !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("multi across namespaces: %v", err)
	}
}

// TestPolicyChanges: goal — bootstrap is once (the same token again is a
// no-op), the last admin cannot be removed (failed precondition), an
// unknown token cannot be deleted (not found), bad tokens and quotas are
// refused, a quota with no limits is removed, and a change never edits
// the policy it was made from. Method: a script.
func TestPolicyChanges(t *testing.T) {
	root := mustToken(t, "root-secret-0123456789", []string{AllNamespaces}, RightAdmin)
	p, err := (*Policy)(nil).Bootstrap(root)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := p.Bootstrap(root); err != nil || again != p {
		t.Fatalf("same bootstrap: %v", err)
	}
	other := mustToken(t, "other-secret-0123456789", []string{AllNamespaces}, RightAdmin)
	if _, err := p.Bootstrap(other); !errors.Is(err, ErrInvalid) {
		t.Fatalf("second bootstrap: %v", err)
	}
	if _, err := p.DeleteToken(root.ID); !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("deleting the last admin: %v", err)
	}
	if _, err := p.DeleteToken("0123456789abcdef"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleting a token that is not there: %v", err)
	}
	if _, err := NewToken("short", "", []string{"a"}, []Right{RightRead}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("short secret: %v", err)
	}
	if _, err := NewToken("long-enough-secret-1", "", []string{"a"}, []Right{RightAdmin}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("namespaced admin: %v", err)
	}
	if _, err := NewToken("long-enough-secret-1", "", []string{"a:b"}, []Right{RightRead}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("namespace with separator: %v", err)
	}
	if _, err := NewToken("long-enough-secret-1", "", []string{"a"}, []Right{"write"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown right: %v", err)
	}
	q, err := p.PutQuota(Quota{Namespace: "a", MaxHeld: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := q.Quota("a"); !ok || got.MaxHeld != 3 {
		t.Fatalf("quota a: %+v %v", got, ok)
	}
	if _, ok := p.Quota("a"); ok {
		t.Fatal("PutQuota edited the policy it was made from")
	}
	cleared, err := q.PutQuota(Quota{Namespace: "a"})
	if _, ok := cleared.Quota("a"); ok || err != nil {
		t.Fatalf("clearing: %v", err)
	}
	two, err := p.PutToken(other)
	if err != nil {
		t.Fatal(err)
	}
	one, err := two.DeleteToken(root.ID)
	if err != nil || len(one.Tokens) != 1 || len(two.Tokens) != 2 {
		t.Fatalf("delete: %v, %d/%d tokens", err, len(one.Tokens), len(two.Tokens))
	}
	if err := one.Check(); err != nil {
		t.Fatal(err)
	}
}
