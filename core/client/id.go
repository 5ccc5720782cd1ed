package client

import (
	"crypto/rand"
	"encoding/hex"
)

// newID returns 128 random bits as 32 hex digits, used for client and
// request ids: collisions would merge unrelated requests in server dedupe.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails; it aborts the program instead.
	return hex.EncodeToString(b[:])
}
