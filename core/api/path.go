package api

import (
	"net/url"
	"path"
)

// CanonicalPath reports whether u's path is spelled the one way the API
// names its endpoints: no empty, "." or ".." segments, no trailing slash
// and no percent-escape. net/http's ServeMux would answer any other
// spelling of an endpoint with a redirect to the cleaned path (an empty
// 301 or 307); members and gateways answer 404 not_found instead, so a
// path, like a body, has one spelling.
func CanonicalPath(u *url.URL) bool {
	return u.RawPath == "" && (u.Path == "*" || path.Clean(u.Path) == u.Path)
}

// NonCanonicalPathError is the message of the 404 that refuses a path
// CanonicalPath does not take.
func NonCanonicalPathError(u *url.URL) string {
	return "no such endpoint: " + u.EscapedPath() +
		" (paths are taken as spelled: no empty, '.' or '..' segments, no trailing slash, no percent-escapes)"
}
