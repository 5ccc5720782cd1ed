// Package acl decides who may do what to which locks: bearer tokens bound
// to namespaces (a resource's namespace is its name up to the first ':',
// lock.Namespace) with rights, and quotas per namespace. A Policy is pure
// data kept in the metadata group (core/meta), so every member enforces
// the same one; it is never edited in place (every change returns a new
// Policy), so readers may share it without locks. Secrets never enter a
// Policy, only their SHA-256.
package acl

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lock"
)

// Right is one thing a token may do in its namespaces.
type Right string

const (
	// RightAcquire acquires locks, and releases or renews a lease by its
	// id (holding the id is holding the lease).
	RightAcquire Right = "acquire"
	// RightReleaseAny releases whoever holds a lock, without its lease id
	// (POST /acl/force_release): an operator's way out of a stuck holder.
	RightReleaseAny Right = "release_any"
	// RightRead reads lock status.
	RightRead Right = "read"
	// RightAdmin manages tokens and quotas. Only a token for every
	// namespace ("*") may have it: it can mint any token anyway.
	RightAdmin Right = "admin"
)

// AllNamespaces in a token's namespaces covers every namespace.
const AllNamespaces = "*"

var (
	// ErrUnauthenticated: ACLs are on and the request has no token, or one
	// the policy does not know.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrPermissionDenied: the token lacks the right in that namespace.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrInvalid: a token or quota that makes no sense.
	ErrInvalid = errors.New("invalid acl")
	// ErrNotFound: a change names a token the policy does not have.
	ErrNotFound = errors.New("not found")
	// ErrFailedPrecondition: a change the policy's present state forbids
	// (it would leave no admin token); it may succeed once that changes.
	ErrFailedPrecondition = errors.New("failed precondition")
)

// Refusal is a change the policy refuses for a reason other than its
// own shape: its text is one sentence for the caller, and Kind
// (ErrNotFound, ErrFailedPrecondition) says which, for errors.Is.
type Refusal struct {
	Kind error
	Msg  string
}

func (r *Refusal) Error() string { return r.Msg }

func (r *Refusal) Unwrap() error { return r.Kind }

// Token is a bearer token as the policy keeps it.
type Token struct {
	// ID names the token in listings and deletes: the first 16 hex digits
	// of Hash, so it reveals nothing usable.
	ID   string `json:"id"`
	Hash string `json:"hash"`
	Name string `json:"name,omitempty"`
	// Namespaces the token covers; "*" is all.
	Namespaces []string `json:"namespaces"`
	Rights     []Right  `json:"rights"`
}

// Quota limits one namespace: the wire type, with the checks and the
// state machine's part (Limits) attached.
type Quota api.Quota

// Limits is the part of q the state machine enforces.
func (q Quota) Limits() lock.Quota {
	return lock.Quota{Held: q.MaxHeld, Queued: q.MaxQueued, ClientHeld: q.ClientMaxHeld, ClientQueued: q.ClientMaxQueued}
}

// Policy is the whole ACL state. A nil *Policy means ACLs are off.
type Policy struct {
	Tokens []Token `json:"tokens"` // sorted by ID
	Quotas []Quota `json:"quotas"` // sorted by Namespace
}

// Hash is the hex SHA-256 of a token secret.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// NewSecret draws a fresh random token secret (128 bits, hex).
func NewSecret() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // the runtime guarantees crypto/rand does not fail
	return hex.EncodeToString(b)
}

// NewToken describes a token for secret, checking what it may do.
func NewToken(secret, name string, namespaces []string, rights []Right) (Token, error) {
	if len(secret) < 16 {
		return Token{}, fmt.Errorf("%w: a token secret needs at least 16 characters", ErrInvalid)
	}
	h := Hash(secret)
	t := Token{ID: h[:16], Hash: h, Name: name, Namespaces: slices.Clone(namespaces), Rights: slices.Clone(rights)}
	slices.Sort(t.Namespaces)
	t.Namespaces = slices.Compact(t.Namespaces)
	slices.Sort(t.Rights)
	t.Rights = slices.Compact(t.Rights)
	return t, t.Validate()
}

// Validate reports what is wrong with t.
func (t Token) Validate() error {
	if len(t.Hash) != 64 || t.ID != t.Hash[:16] {
		return fmt.Errorf("%w: token id must be the first 16 hex digits of a SHA-256", ErrInvalid)
	}
	if _, err := hex.DecodeString(t.Hash); err != nil {
		return fmt.Errorf("%w: token hash is not hex", ErrInvalid)
	}
	if len(t.Namespaces) == 0 || len(t.Rights) == 0 {
		return fmt.Errorf("%w: a token needs at least one namespace and one right", ErrInvalid)
	}
	for _, r := range t.Rights {
		switch r {
		case RightAcquire, RightReleaseAny, RightRead:
		case RightAdmin:
			if !slices.Contains(t.Namespaces, AllNamespaces) {
				return fmt.Errorf("%w: the admin right needs namespaces [\"*\"]", ErrInvalid)
			}
		default:
			return fmt.Errorf("%w: unknown right %q (want acquire, release_any, read or admin)", ErrInvalid, r)
		}
	}
	for _, ns := range t.Namespaces {
		if lock.Namespace(ns+string(lock.NamespaceSeparator)) != ns {
			return fmt.Errorf("%w: namespace %q contains the separator %q", ErrInvalid, ns, lock.NamespaceSeparator)
		}
	}
	return nil
}

// Validate reports what is wrong with q.
func (q Quota) Validate() error {
	if lock.Namespace(q.Namespace+string(lock.NamespaceSeparator)) != q.Namespace || q.Namespace == AllNamespaces {
		return fmt.Errorf("%w: quota namespace %q", ErrInvalid, q.Namespace)
	}
	if q.AcquiresPerSec < 0 || q.Burst < 0 {
		return fmt.Errorf("%w: acquires_per_sec and burst must be >= 0", ErrInvalid)
	}
	return nil
}

// Bootstrap turns ACLs on with admin as the first token. A policy that
// exists already is kept: the same admin again is a no-op (a retried or
// repeated bootstrap), another one an error.
func (p *Policy) Bootstrap(admin Token) (*Policy, error) {
	if err := admin.Validate(); err != nil {
		return p, err
	}
	if !slices.Contains(admin.Rights, RightAdmin) {
		return p, fmt.Errorf("%w: the bootstrap token must have the admin right", ErrInvalid)
	}
	if p != nil {
		if _, ok := p.token(admin.ID); ok {
			return p, nil
		}
		return p, fmt.Errorf("%w: ACLs are already bootstrapped with another token", ErrInvalid)
	}
	return &Policy{Tokens: []Token{admin}}, nil
}

// PutToken adds or replaces t (by ID).
func (p *Policy) PutToken(t Token) (*Policy, error) {
	if p == nil {
		return p, fmt.Errorf("%w: ACLs are not bootstrapped", ErrInvalid)
	}
	if err := t.Validate(); err != nil {
		return p, err
	}
	n := p.clone()
	i, found := slices.BinarySearchFunc(n.Tokens, t.ID, func(x Token, id string) int { return cmp.Compare(x.ID, id) })
	if found {
		n.Tokens[i] = t
	} else {
		n.Tokens = slices.Insert(n.Tokens, i, t)
	}
	if !n.hasAdmin() {
		return p, &Refusal{Kind: ErrFailedPrecondition,
			Msg: fmt.Sprintf("token %s is the last admin token: it cannot lose the admin right until another admin token exists", t.ID)}
	}
	return n, nil
}

// DeleteToken removes token id, refusing an id it does not have and the
// last admin token (a cluster nobody can administer is beyond repair).
func (p *Policy) DeleteToken(id string) (*Policy, error) {
	if p == nil {
		return p, fmt.Errorf("%w: ACLs are not bootstrapped", ErrInvalid)
	}
	i, found := slices.BinarySearchFunc(p.Tokens, id, func(x Token, id string) int { return cmp.Compare(x.ID, id) })
	if !found {
		return p, &Refusal{Kind: ErrNotFound, Msg: fmt.Sprintf("there is no token %q", id)}
	}
	n := p.clone()
	n.Tokens = slices.Delete(n.Tokens, i, i+1)
	if !n.hasAdmin() {
		return p, &Refusal{Kind: ErrFailedPrecondition,
			Msg: fmt.Sprintf("token %s is the last admin token: create another admin token before deleting it", id)}
	}
	return n, nil
}

// PutQuota sets the quota of q.Namespace; a quota with no limit removes it.
func (p *Policy) PutQuota(q Quota) (*Policy, error) {
	if p == nil {
		return p, fmt.Errorf("%w: ACLs are not bootstrapped", ErrInvalid)
	}
	if err := q.Validate(); err != nil {
		return p, err
	}
	n := p.clone()
	i, found := slices.BinarySearchFunc(n.Quotas, q.Namespace, func(x Quota, ns string) int { return cmp.Compare(x.Namespace, ns) })
	switch {
	case q == Quota{Namespace: q.Namespace}:
		if found {
			n.Quotas = slices.Delete(n.Quotas, i, i+1)
		}
	case found:
		n.Quotas[i] = q
	default:
		n.Quotas = slices.Insert(n.Quotas, i, q)
	}
	return n, nil
}

// Quota returns the quota of namespace ns, if one is set.
func (p *Policy) Quota(ns string) (Quota, bool) {
	if p == nil {
		return Quota{}, false
	}
	i, found := slices.BinarySearchFunc(p.Quotas, ns, func(x Quota, ns string) int { return cmp.Compare(x.Namespace, ns) })
	if !found {
		return Quota{}, false
	}
	return p.Quotas[i], true
}

// Authenticate finds the token whose secret was presented.
func (p *Policy) Authenticate(secret string) (Token, error) {
	if secret == "" {
		return Token{}, fmt.Errorf("%w: ACLs are on: send Authorization: Bearer <token>", ErrUnauthenticated)
	}
	h := Hash(secret)
	if t, ok := p.token(h[:16]); ok && t.Hash == h {
		return t, nil
	}
	return Token{}, fmt.Errorf("%w: unknown token", ErrUnauthenticated)
}

// Authorize checks that secret names a token with right in the namespace
// of every resource. A nil policy (ACLs off) allows everything.
func (p *Policy) Authorize(secret string, right Right, resources ...string) error {
	if p == nil {
		return nil
	}
	t, err := p.withRight(secret, right)
	if err != nil || slices.Contains(t.Namespaces, AllNamespaces) {
		return err
	}
	for _, r := range resources {
		if ns := lock.Namespace(r); !slices.Contains(t.Namespaces, ns) {
			return fmt.Errorf("%w: token %s may not %s in namespace %q", ErrPermissionDenied, t.ID, right, ns)
		}
	}
	return nil
}

// AuthorizeEvery checks secret for right in every namespace: a request
// whose scope no single namespace bounds (a watch of a prefix without the
// separator) needs a token for "*".
func (p *Policy) AuthorizeEvery(secret string, right Right) error {
	if p == nil {
		return nil
	}
	t, err := p.withRight(secret, right)
	if err != nil {
		return err
	}
	if !slices.Contains(t.Namespaces, AllNamespaces) {
		return fmt.Errorf("%w: token %s may not %s across namespaces", ErrPermissionDenied, t.ID, right)
	}
	return nil
}

// withRight is the token of secret if it holds right.
func (p *Policy) withRight(secret string, right Right) (Token, error) {
	t, err := p.Authenticate(secret)
	if err != nil {
		return Token{}, err
	}
	if !slices.Contains(t.Rights, right) {
		return Token{}, fmt.Errorf("%w: token %s lacks the %s right", ErrPermissionDenied, t.ID, right)
	}
	return t, nil
}

func (p *Policy) token(id string) (Token, bool) {
	i, found := slices.BinarySearchFunc(p.Tokens, id, func(x Token, id string) int { return cmp.Compare(x.ID, id) })
	if !found {
		return Token{}, false
	}
	return p.Tokens[i], true
}

func (p *Policy) hasAdmin() bool {
	return slices.ContainsFunc(p.Tokens, func(t Token) bool { return slices.Contains(t.Rights, RightAdmin) })
}

// clone copies the lists (tokens' own slices are never edited).
func (p *Policy) clone() *Policy {
	return &Policy{Tokens: slices.Clone(p.Tokens), Quotas: slices.Clone(p.Quotas)}
}

// Check reports whether p is well formed (a decoded snapshot must be).
func (p *Policy) Check() error {
	if p == nil {
		return nil
	}
	if !slices.IsSortedFunc(p.Tokens, func(a, b Token) int { return cmp.Compare(a.ID, b.ID) }) ||
		!slices.IsSortedFunc(p.Quotas, func(a, b Quota) int { return cmp.Compare(a.Namespace, b.Namespace) }) {
		return fmt.Errorf("%w: tokens or quotas out of order", ErrInvalid)
	}
	for _, t := range p.Tokens {
		if err := t.Validate(); err != nil {
			return err
		}
	}
	for _, q := range p.Quotas {
		if err := q.Validate(); err != nil {
			return err
		}
	}
	return nil
}
