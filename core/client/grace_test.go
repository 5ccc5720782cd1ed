package client

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Goal: a lease acquired with a grace window sends it, is not Valid past
// ValidUntil, yet is not lost until the window passed too, and a renew in
// the window revives it (valid again, same token); without a renew it is
// lost at ValidUntil+Grace. Method: fake clock stepped across both bounds.
func TestLeaseGraceWindow(t *testing.T) {
	fs, srv := startFake(t)
	clock := newFakeClock()
	c := newTestClient(t, Config{Endpoints: []string{srv.URL}, Now: clock.Now})
	ctx := context.Background()
	l, err := c.Acquire(ctx, "r", AcquireOptions{TTL: 10 * time.Second, Grace: 5 * time.Second})
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	fs.mu.Lock()
	sent := fs.acquires[0].GraceMs
	fs.mu.Unlock()
	if sent != 5000 {
		t.Fatalf("acquire sent grace %d ms, want 5000", sent)
	}
	token := l.Token()
	clock.Advance(9 * time.Second) // at ValidUntil
	if l.Valid() || isClosed(l.Lost()) || l.Err() != nil {
		t.Fatalf("in the grace window: Valid %v, Lost closed %v, Err %v; want invalid, not lost", l.Valid(), isClosed(l.Lost()), l.Err())
	}
	if err := l.Renew(ctx, 0); err != nil {
		t.Fatalf("Renew in the grace window: %v", err)
	}
	if !l.Valid() || l.Token() != token {
		t.Fatalf("after the revive: Valid %v, token %d (was %d)", l.Valid(), l.Token(), token)
	}
	clock.Advance(9*time.Second + 5*time.Second - time.Nanosecond)
	if isClosed(l.Lost()) || l.Valid() {
		t.Fatal("lost before ValidUntil+Grace, or valid past ValidUntil")
	}
	clock.Advance(time.Nanosecond)
	if err := l.Err(); !errors.Is(err, ErrLeaseExpired) || !isClosed(l.Lost()) {
		t.Fatalf("at ValidUntil+Grace: Lost closed %v, Err %v", isClosed(l.Lost()), err)
	}
	if err := l.Renew(ctx, 0); !errors.Is(err, ErrLeaseExpired) {
		t.Fatalf("Renew after the window = %v, want ErrLeaseExpired", err)
	}
}

// Goal: a grace outside 0..TTL is refused before anything is sent.
func TestAcquireGraceAboveTTL(t *testing.T) {
	fs, srv := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{srv.URL}})
	if _, err := c.Acquire(context.Background(), "r", AcquireOptions{TTL: time.Second, Grace: 2 * time.Second}); err == nil {
		t.Fatal("Acquire with grace above the TTL succeeded")
	}
	if n := fs.callCount("/lock/acquire"); n != 0 {
		t.Fatalf("server saw %d acquires", n)
	}
}
