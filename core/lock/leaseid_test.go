package lock

import (
	"errors"
	"strings"
	"testing"
)

// TestParseLeaseIDTakesOnlyLowercase: goal — a lease id has one spelling,
// the 32 lowercase hex digits String writes, so two byte strings never
// name one lease (hex.Decode alone also takes upper case). Method: parse
// an id, its upper-case and mixed-case spellings; only the first parses,
// the others are ErrInvalid saying what a lease id is.
func TestParseLeaseIDTakesOnlyLowercase(t *testing.T) {
	id := LeaseID{0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89}
	if back, err := ParseLeaseID(id.String()); err != nil || back != id {
		t.Fatalf("ParseLeaseID(%s) = %v, %v", id, back, err)
	}
	mixed := id.String()[:31] + "F" // still a hex number, not lowercase
	for _, bad := range []string{strings.ToUpper(id.String()), mixed} {
		_, err := ParseLeaseID(bad)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "lease_id must be 32 lowercase hex digits") {
			t.Errorf("ParseLeaseID(%q) = %v, want ErrInvalid: lease_id must be 32 lowercase hex digits", bad, err)
		}
	}
}
