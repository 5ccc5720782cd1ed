package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// This file reads README.md's ```sh blocks the way TestREADMEExamples
// runs them: logical lines (a trailing backslash continues one), each a
// shell command and its comment, and the expected replies the comments
// give, in a small pattern language over JSON.

// shLine is one logical line of a ```sh block.
type shLine struct {
	// words are the command's words after shell quoting, with $VAR
	// expanded from vars; empty for a comment line.
	words []string
	// comment is the text after an unquoted #, without the #.
	comment string
	// text is the line as written (for messages).
	text string
}

// rawLine is one logical line of a ```sh block, as written, and the
// README line it starts on.
type rawLine struct {
	n    int
	text string
}

// shBlocks returns the ```sh blocks of a Markdown text, each as its
// logical lines (unexpanded: variables are known only while running).
func shBlocks(markdown string) [][]rawLine {
	var blocks [][]rawLine
	var cur []rawLine
	in, cont, contAt := false, "", 0
	for i, l := range strings.Split(markdown, "\n") {
		switch {
		case !in && strings.TrimSpace(l) == "```sh":
			in, cur = true, nil
		case in && strings.TrimSpace(l) == "```":
			in = false
			blocks = append(blocks, cur)
		case in && strings.HasSuffix(l, `\`):
			if cont == "" {
				contAt = i + 1
			}
			cont += strings.TrimSuffix(l, `\`)
		case in && cont != "":
			cur = append(cur, rawLine{contAt, cont + l})
			cont = ""
		case in:
			cur = append(cur, rawLine{i + 1, l})
		}
	}
	return blocks
}

// splitSh splits one logical line into words as a POSIX shell would for
// the quoting this README uses ('...', "..." with \ escapes, $VAR and
// ${VAR} outside single quotes) and the comment after an unquoted # that
// starts a word.
func splitSh(text string, vars map[string]string) (shLine, error) {
	out := shLine{text: text}
	var word strings.Builder
	inWord := false
	end := func() {
		if inWord {
			out.words = append(out.words, word.String())
		}
		word.Reset()
		inWord = false
	}
	expand := func(s string, i int) (int, error) {
		j := i + 1
		var name string
		if j < len(s) && s[j] == '{' {
			k := strings.IndexByte(s[j:], '}')
			if k < 0 {
				return 0, fmt.Errorf("unterminated ${ in %q", text)
			}
			name, j = s[j+1:j+k], j+k+1
		} else {
			for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			name = s[i+1 : j]
		}
		if name == "" {
			word.WriteByte('$')
			return i + 1, nil
		}
		v, ok := vars[name]
		if !ok {
			return 0, fmt.Errorf("$%s is not set in this block: %q", name, text)
		}
		word.WriteString(v)
		return j, nil
	}
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ' ' || c == '\t':
			end()
			i++
		case c == '#' && !inWord:
			end()
			out.comment = strings.TrimSpace(text[i+1:])
			return out, nil
		case c == '\'':
			k := strings.IndexByte(text[i+1:], '\'')
			if k < 0 {
				return out, fmt.Errorf("unterminated ' in %q", text)
			}
			word.WriteString(text[i+1 : i+1+k])
			inWord, i = true, i+k+2
		case c == '"':
			inWord = true
			i++
			for ; i < len(text) && text[i] != '"'; i++ {
				switch {
				case text[i] == '\\' && i+1 < len(text) && strings.IndexByte(`"\$`+"`", text[i+1]) >= 0:
					word.WriteByte(text[i+1])
					i++
				case text[i] == '$':
					j, err := expand(text, i)
					if err != nil {
						return out, err
					}
					i = j - 1
				default:
					word.WriteByte(text[i])
				}
			}
			if i >= len(text) {
				return out, fmt.Errorf("unterminated \" in %q", text)
			}
			i++
		case c == '$':
			inWord = true
			j, err := expand(text, i)
			if err != nil {
				return out, err
			}
			i = j
		case c == '\\' && i+1 < len(text):
			word.WriteByte(text[i+1])
			inWord, i = true, i+2
		default:
			word.WriteByte(c)
			inWord, i = true, i+1
		}
	}
	end()
	return out, nil
}

// Markers the pattern language turns "…" into.
const (
	// anyValue stands for "…" in a value's place: any value.
	anyValue = "\x00any"
	// restMarker stands for "…" in an object's or array's member list: any
	// further members (in an array: elements, after those given).
	restMarker = "\x00rest"
)

// wildcardKeys name values that differ on every run: any value of the
// same JSON type matches, and a string ending in "…" ("9f0c…") names the
// value it matched, so that later commands can use it.
var wildcardKeys = []string{"lease_id", "lease_fingerprint", "log_time", "id", "secret"}

// expectedJSON extracts the JSON pattern from a comment ("prose: {...}
// prose" or "{...}"): the first balanced {...}; ok is false when the
// comment holds none.
func expectedJSON(comment string) (pattern string, ok bool) {
	start := strings.IndexByte(comment, '{')
	if start < 0 {
		return "", false
	}
	depth, inString := 0, false
	for i := start; i < len(comment); i++ {
		c := comment[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return comment[start : i+1], true
			}
		}
	}
	return "", false
}

// parsePattern reads a pattern: JSON where "…" outside a string is any
// value (after ':') or any further members (after '{', '[' or ',').
func parsePattern(pattern string) (any, error) {
	var b strings.Builder
	var stack []byte
	inString := false
	last := byte(0) // last non-space byte written outside strings
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if inString {
			b.WriteByte(c)
			switch c {
			case '\\':
				i++
				if i < len(pattern) {
					b.WriteByte(pattern[i])
				}
			case '"':
				inString = false
				last = '"'
			}
			continue
		}
		if strings.HasPrefix(pattern[i:], "…") {
			switch {
			case last == ':':
				b.WriteString(`"\u0000any"`) // anyValue
			case len(stack) > 0 && stack[len(stack)-1] == '{' && (last == '{' || last == ','):
				b.WriteString(`"\u0000rest":0`) // restMarker
			case len(stack) > 0 && stack[len(stack)-1] == '[' && (last == '[' || last == ','):
				b.WriteString(`"\u0000rest"`) // restMarker
			default:
				return nil, fmt.Errorf("… at byte %d of %s is neither a value nor the rest of a list", i, pattern)
			}
			last = '"'
			i += len("…") - 1
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			stack = append(stack, c)
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
		b.WriteByte(c)
		if c != ' ' && c != '\t' {
			last = c
		}
	}
	dec := json.NewDecoder(strings.NewReader(b.String()))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("pattern %s: %w", pattern, err)
	}
	return v, nil
}

// matcher compares replies with patterns, binding the placeholders that
// wildcard values name.
type matcher struct {
	bound map[string]string
}

// match reports how got (a decoded JSON reply) differs from want (a
// parsed pattern), "" when it does not; key is the member want is the
// value of ("" at the top).
func (m *matcher) match(path, key string, want, got any) string {
	if s, ok := want.(string); ok && s == anyValue {
		return ""
	}
	if slices.Contains(wildcardKeys, key) {
		if fmt.Sprintf("%T", want) != fmt.Sprintf("%T", got) {
			return fmt.Sprintf("%s: got %v, want a %T", path, got, want)
		}
		if s, ok := want.(string); ok && strings.HasSuffix(s, "…") && s != "…" {
			m.bound[s] = got.(string)
		}
		return ""
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %v, want an object", path, got)
		}
		_, rest := w[restMarker]
		for k := range g {
			if _, ok := w[k]; !ok && !rest {
				return fmt.Sprintf("%s: reply has %q, the example does not (add it, or …)", path, k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(w)) {
			if k == restMarker {
				continue
			}
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s: the example has %q, the reply does not", path, k)
			}
			if d := m.match(path+"."+k, k, w[k], gv); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s: got %v, want an array", path, got)
		}
		rest := len(w) > 0 && w[len(w)-1] == restMarker
		if rest {
			w = w[:len(w)-1]
		}
		if len(g) < len(w) || !rest && len(g) != len(w) {
			return fmt.Sprintf("%s: %d elements, the example has %d", path, len(g), len(w))
		}
		for i := range w {
			if d := m.match(fmt.Sprintf("%s[%d]", path, i), key, w[i], g[i]); d != "" {
				return d
			}
		}
		return ""
	case string:
		g, ok := got.(string)
		if prefix, cut := strings.CutSuffix(w, "…"); cut && ok && strings.HasPrefix(g, prefix) {
			return ""
		}
		if !ok || g != w {
			return fmt.Sprintf("%s: got %v, the example says %q", path, got, w)
		}
		return ""
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return fmt.Sprintf("%s: got %v, the example says %v", path, got, want)
		}
		return ""
	}
}

// substitute replaces the bound placeholders in s by what they matched.
func (m *matcher) substitute(s string) string {
	for p, v := range m.bound {
		s = strings.ReplaceAll(s, p, v)
	}
	return s
}

// decodeReply decodes a JSON reply for match.
func decodeReply(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// TestREADMEPatterns: goal — the pattern language of TestREADMEExamples
// accepts what the README means and refuses what it does not, so the
// examples test can fail. Method: patterns against replies, each with
// whether it must match; a wildcard key binds its placeholder.
func TestREADMEPatterns(t *testing.T) {
	for _, tc := range []struct {
		pattern, reply string
		ok             bool
	}{
		{`{"a":1,"b":"x"}`, `{"a":1,"b":"x"}`, true},
		{`{"a":1}`, `{"a":1,"b":"x"}`, false},         // a key the example lacks
		{`{"a":1,"b":"x"}`, `{"a":1}`, false},         // a key the reply lacks
		{`{"a":1,…}`, `{"a":1,"b":"x"}`, true},        // … as the rest
		{`{"a":2,…}`, `{"a":1,"b":"x"}`, false},       // a concrete value differs
		{`{"a":…}`, `{"a":[1,2]}`, true},              // … as any value
		{`{"l":[1,…]}`, `{"l":[1,2,3]}`, true},        // … as further elements
		{`{"l":[1,…]}`, `{"l":[2,3]}`, false},         // the first element differs
		{`{"l":[]}`, `{"l":[1]}`, false},              // an empty list is empty
		{`{"l":[…]}`, `{"l":[]}`, true},               // … in a list may be nothing
		{`{"leader":"n…"}`, `{"leader":"n3"}`, true},  // a prefix
		{`{"leader":"n…"}`, `{"leader":"m3"}`, false}, // not that prefix
		{`{"log_time":2310}`, `{"log_time":7}`, true}, // a wildcard key: any number
		{`{"log_time":2310}`, `{"log_time":"7"}`, false},
		{`{"lease_id":"9f0c…"}`, `{"lease_id":"00ff"}`, true},
	} {
		want, err := parsePattern(tc.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		got, err := decodeReply([]byte(tc.reply))
		if err != nil {
			t.Fatal(err)
		}
		m := &matcher{bound: map[string]string{}}
		if d := m.match("reply", "", want, got); (d == "") != tc.ok {
			t.Errorf("%s against %s: %q, want match=%v", tc.pattern, tc.reply, d, tc.ok)
		}
	}
	m := &matcher{bound: map[string]string{}}
	want, _ := parsePattern(`{"lease_id":"9f0c…"}`)
	got, _ := decodeReply([]byte(`{"lease_id":"00ff"}`))
	if m.match("reply", "", want, got); m.substitute(`{"lease_id":"9f0c…"}`) != `{"lease_id":"00ff"}` {
		t.Errorf("placeholder not bound: %v", m.bound)
	}
	if _, err := parsePattern(`{"a":1 …}`); err == nil {
		t.Error("a … that is neither a value nor the rest parsed")
	}
}
