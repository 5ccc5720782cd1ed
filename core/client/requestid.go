package client

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// maxRequestID is the longest RequestID a caller may give: the wire id
// adds a separator and 16 hex digits, and the server takes 256 bytes.
const maxRequestID = 256 - 17

// WireRequestID is the request_id the client sends for an acquire of
// resources (one, or an acquire_many's list in order) under the caller's
// id. lockctl derives its ids the same way.
//
// Why derived rather than sent as given: the server remembers a request
// id per shard (README, Semantics), so one id sent for two resources is
// refused request_id_reused when they share a shard and granted as a new
// request when they do not — an outcome the caller cannot foresee without
// knowing placement. Bound to the resource, the caller's id means "this
// acquire of this resource": every retry of a call and every later call
// with the same id and resource (an application retrying after a crash,
// lockctl --request-id) is one request, deduplicated as before, and the
// same id with another resource is always a separate request, on any
// shard. The caller's id stays readable in the wire id (server logs); the
// suffix is 64 bits of SHA-256 over the resources, so two resources of one
// caller id collide with probability 2^-64.
func WireRequestID(id string, resources ...string) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, r := range resources {
		// Length-prefixed: ["ab","c"] and ["a","bc"] hash apart.
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(r)))])
		h.Write([]byte(r))
	}
	return id + "/" + hex.EncodeToString(h.Sum(nil)[:8])
}

// requestID is the wire id of one call: the caller's id bound to its
// resources, or, without one, a fresh random id (unique to the call, so
// it names its resources alone), which every retry of the call reuses.
func (c *Client) requestID(given string, resources ...string) string {
	if given == "" {
		return c.entropy.id()
	}
	return WireRequestID(given, resources...)
}

// validRequestID checks a caller's RequestID.
func validRequestID(id string) error {
	if len(id) > maxRequestID {
		return fmt.Errorf("request id of %d bytes, at most %d", len(id), maxRequestID)
	}
	return nil
}
