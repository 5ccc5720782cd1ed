package node

import (
	"errors"
	"testing"
)

// Goal: a group serves at most maxWatchers watches (each costs a reader
// goroutine on the front end) and a closed one frees its place, closed
// twice or not. Method: open the bound, one more, close one twice, open.
func TestWatchersAreBounded(t *testing.T) {
	h := newHistory(DefaultWatchHistory)
	var ws []*Watcher
	for range maxWatchers {
		w, err := h.open(0, nil)
		if err != nil {
			t.Fatalf("watch %d: %v", len(ws)+1, err)
		}
		ws = append(ws, w)
	}
	if _, err := h.open(0, nil); !errors.Is(err, ErrTooManyWatchers) {
		t.Fatalf("watch past the bound: %v, want ErrTooManyWatchers", err)
	}
	ws[0].Close()
	ws[0].Close()
	if _, err := h.open(0, nil); err != nil {
		t.Fatalf("watch after one closed: %v", err)
	}
	if _, err := h.open(0, nil); !errors.Is(err, ErrTooManyWatchers) {
		t.Fatalf("a double close freed two places: %v", err)
	}
}
