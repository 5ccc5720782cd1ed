package maelstrom

import "testing"

// TestDefinite pins doc/protocol.md's error table: only timeout (0), crash
// (13) and custom codes are indefinite.
func TestDefinite(t *testing.T) {
	want := map[int]bool{
		Timeout: false, NodeNotFound: true, NotSupported: true, TemporarilyUnavailable: true,
		MalformedRequest: true, Crash: false, Abort: true, KeyDoesNotExist: true,
		KeyAlreadyExists: true, PreconditionFailed: true, TxnConflict: true, 1000: false, 1022: false,
	}
	for code, definite := range want {
		if got := Definite(code); got != definite {
			t.Errorf("Definite(%d %s) = %v, want %v", code, CodeName(code), got, definite)
		}
		if got := NewError(code, "").Definite(); got != definite {
			t.Errorf("(*Error).Definite() for %d = %v, want %v", code, got, definite)
		}
	}
}
