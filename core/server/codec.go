package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/service"
)

// decode parses body as exactly one JSON object into v, a pointer to one of
// the api request structs. encoding/json alone is too lenient for names
// that identify locks: it rewrites invalid UTF-8 to U+FFFD (so distinct
// byte strings would name one lock), matches keys case-insensitively and
// lets a repeated key win silently. So the raw bytes are checked first.
func decode(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return fmt.Errorf("%w: empty body, want a JSON object", service.ErrInvalid)
	}
	if err := checkUTF8(body); err != nil {
		return err
	}
	if err := checkKeys(body, fieldsOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: malformed JSON: %w", service.ErrInvalid, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: trailing data after the JSON object", service.ErrInvalid)
	}
	return nil
}

// checkUTF8 rejects raw invalid UTF-8 and \u escapes of lone surrogates:
// both decode to U+FFFD. It runs before the JSON syntax is checked, so on a
// malformed body it may miss an escape; the decoder then rejects the body.
func checkUTF8(b []byte) error {
	if !utf8.Valid(b) {
		off := 0
		for off < len(b) {
			r, size := utf8.DecodeRune(b[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		return fmt.Errorf("%w: body is not valid UTF-8 (byte %d)", service.ErrInvalid, off)
	}
	inString := false
	for i := 0; i < len(b); i++ {
		switch {
		case !inString:
			inString = b[i] == '"'
		case b[i] == '"':
			inString = false
		case b[i] == '\\':
			r, ok := escapedRune(b, i)
			if !ok {
				i++ // a two-byte escape such as \" or \\: skip its second byte
				continue
			}
			switch {
			case r >= 0xd800 && r < 0xdc00:
				// A high surrogate is valid only as the first half of a pair.
				if lo, ok := escapedRune(b, i+6); ok && lo >= 0xdc00 && lo < 0xe000 {
					i += 11
					continue
				}
				return fmt.Errorf("%w: \\u%04x at byte %d is a lone surrogate, not a character", service.ErrInvalid, r, i)
			case r >= 0xdc00 && r < 0xe000:
				return fmt.Errorf("%w: \\u%04x at byte %d is a lone surrogate, not a character", service.ErrInvalid, r, i)
			}
			i += 5
		}
	}
	return nil
}

// escapedRune decodes a \uXXXX escape starting at b[i].
func escapedRune(b []byte, i int) (rune, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// checkKeys walks the top-level object token by token and accepts only the
// known keys, spelled exactly, each at most once, and values without a
// null anywhere in them: encoding/json would leave the field's zero value
// in its place ("mode":null reading as no mode), and no field of the API
// takes null. Values are otherwise skipped whatever their shape; the
// decoder checks their types afterwards.
func checkKeys(body []byte, known []string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	malformed := func(err error) error { return fmt.Errorf("%w: malformed JSON: %w", service.ErrInvalid, err) }
	tok, err := dec.Token()
	if err != nil {
		return malformed(err)
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("%w: body must be a JSON object", service.ErrInvalid)
	}
	seen := make(map[string]bool, len(known))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return malformed(err)
		}
		key, _ := tok.(string) // inside an object the decoder only yields string keys
		if !slices.Contains(known, key) {
			for _, k := range known {
				if strings.EqualFold(k, key) {
					return fmt.Errorf("%w: unknown field %q (field names are case-sensitive: %q)", service.ErrInvalid, key, k)
				}
			}
			return fmt.Errorf("%w: unknown field %q (want %s)", service.ErrInvalid, key, strings.Join(known, ", "))
		}
		if seen[key] {
			return fmt.Errorf("%w: field %q given more than once", service.ErrInvalid, key)
		}
		seen[key] = true
		null, err := skipValue(dec)
		if err != nil {
			return malformed(err)
		}
		if null {
			return fmt.Errorf("%w: field %q is or holds null: leave an optional field out, give a value otherwise", service.ErrInvalid, key)
		}
	}
	if _, err := dec.Token(); err != nil {
		return malformed(err)
	}
	return nil
}

// skipValue consumes one JSON value, nested or not, and reports whether
// it is or holds a null.
func skipValue(dec *json.Decoder) (null bool, err error) {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return null, err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		case nil:
			null = true
		}
		if depth == 0 {
			return null, nil
		}
	}
}

var fieldCache sync.Map // reflect.Type -> []string

// fieldsOf lists the JSON keys of the struct v points to.
func fieldsOf(v any) []string {
	t := reflect.TypeOf(v).Elem()
	if f, ok := fieldCache.Load(t); ok {
		return f.([]string)
	}
	var keys []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	fieldCache.Store(t, keys)
	return keys
}

// parseQuery parses a raw query string strictly: well-formed, valid UTF-8,
// only the allowed parameters, each at most once. url.Values would drop
// malformed pairs and hide repeats.
func parseQuery(raw string, allowed []string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: malformed query string: %w", service.ErrInvalid, err)
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case !utf8.ValidString(k):
			return nil, fmt.Errorf("%w: query parameter name %q is not valid UTF-8", service.ErrInvalid, k)
		case !slices.Contains(allowed, k):
			if len(allowed) == 0 {
				return nil, fmt.Errorf("%w: unknown query parameter %q (this endpoint takes none)", service.ErrInvalid, k)
			}
			return nil, fmt.Errorf("%w: unknown query parameter %q (want %s)", service.ErrInvalid, k, strings.Join(allowed, ", "))
		case len(q[k]) > 1:
			return nil, fmt.Errorf("%w: query parameter %q given more than once", service.ErrInvalid, k)
		case !utf8.ValidString(q[k][0]):
			return nil, fmt.Errorf("%w: query parameter %q is not valid UTF-8", service.ErrInvalid, k)
		}
	}
	return q, nil
}

// queryBool reads an optional boolean parameter: true/1 or false/0.
func queryBool(q url.Values, name string) (bool, error) {
	if !q.Has(name) {
		return false, nil
	}
	switch q.Get(name) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("%w: query parameter %s=%q: want true, false, 1 or 0", service.ErrInvalid, name, q.Get(name))
}

// classify maps an error to the API error the caller gets: the front
// end's own method refusal, else the service's classes.
func classify(err error) api.Error {
	if errors.Is(err, errMethodNotAllowed) {
		return api.Error{Code: api.CodeMethodNotAllowed, Error: err.Error()}
	}
	return service.Classify(err)
}

func writeError(w http.ResponseWriter, code api.Code, msg string) {
	writeAPIError(w, api.Error{Error: msg, Code: code})
}

func writeAPIError(w http.ResponseWriter, e api.Error) {
	writeJSON(w, e.Code.HTTPStatus(), e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
