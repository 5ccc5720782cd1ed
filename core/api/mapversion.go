package api

import (
	"net/http"
	"strconv"
)

// HeaderMapVersion is on every reply of a member's API routes: the version
// of the shard map the member routes by. A gateway or client caching an
// older map fetches it again at once, instead of at its next periodic
// refresh.
const HeaderMapVersion = "Lockstep-Map-Version"

// MapVersion reads HeaderMapVersion; ok is false when it is absent or not
// a version.
func MapVersion(h http.Header) (v uint64, ok bool) {
	s := h.Get(HeaderMapVersion)
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

// SetMapVersion sets HeaderMapVersion to v.
func SetMapVersion(h http.Header, v uint64) {
	h.Set(HeaderMapVersion, strconv.FormatUint(v, 10))
}
