package region

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/kvnode/kvnode/internal/chunked"
)

// NormalizeValue checks that raw is one JSON object and returns it compacted.
// Compacting removes insignificant whitespace only: member order, number
// spelling (10.0 stays 10.0, big integers keep every digit) and string escapes
// are kept, so a value reads back exactly as it was sent. A value sent
// compact is returned as a sub-slice of raw, not copied.
func NormalizeValue(raw []byte) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%w: the request body is empty; an entry value must be a JSON object", ErrInvalid)
	}
	if trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: an entry value must be a JSON object, got %s", ErrInvalid, describeJSON(trimmed[0]))
	}
	// encoding/json accepts invalid UTF-8 inside strings; JSON text must be
	// UTF-8 (RFC 8259), and values are served with charset=utf-8.
	if !utf8.Valid(trimmed) {
		return nil, fmt.Errorf("%w: the value is not valid UTF-8", ErrInvalid)
	}
	if !json.Valid(trimmed) {
		// json.Compact's error says what is wrong and where.
		var sink bytes.Buffer
		err := json.Compact(&sink, trimmed)
		return nil, fmt.Errorf("%w: malformed JSON: %v", ErrInvalid, err)
	}
	v := Compact(trimmed)
	if d := depth(v); d > MaxValueDepth {
		return nil, fmt.Errorf("%w: the value nests %d levels deep; at most %d are allowed", ErrInvalid, d, MaxValueDepth)
	}
	return json.RawMessage(v), nil
}

// Compact is valid JSON b without the whitespace outside its strings, as
// json.Compact makes it: b itself when it has none (a value sent compact,
// the common case, is not copied), else a copy made a step at a time
// (internal/chunked: json.Compact copies a long string, and
// bytes.Buffer.Grow clears its buffer, in one unpreemptible call, which
// stalled a member for a 100 MiB value). b must be valid JSON.
func Compact(b []byte) []byte {
	first := nextSpace(b, 0)
	if first < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	start := 0
	for i := first; i >= 0; i = nextSpace(b, start) {
		out = chunked.Append(out, b[start:i])
		start = i + 1
	}
	return chunked.Append(out, b[start:])
}

// nextSpace is the index of the first whitespace outside a string in
// valid JSON b from index from on (which must not be inside a string), or
// -1.
func nextSpace(b []byte, from int) int {
	inString, escaped := false, false
	for i := from; i < len(b); i++ {
		switch c := b[i]; {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return i
		}
	}
	return -1
}

// CheckCompacted checks a value cut from a body that json.Compact has
// already validated and compacted and that is valid UTF-8 as a whole (a
// multi-key PUT's array): what NormalizeValue checks beyond that, without
// copying it again. v is returned as the stored value.
func CheckCompacted(v []byte) (json.RawMessage, error) {
	if len(v) == 0 || v[0] != '{' {
		if len(v) == 0 {
			return nil, fmt.Errorf("%w: the request body is empty; an entry value must be a JSON object", ErrInvalid)
		}
		return nil, fmt.Errorf("%w: an entry value must be a JSON object, got %s", ErrInvalid, describeJSON(v[0]))
	}
	if d := depth(v); d > MaxValueDepth {
		return nil, fmt.Errorf("%w: the value nests %d levels deep; at most %d are allowed", ErrInvalid, d, MaxValueDepth)
	}
	return json.RawMessage(v), nil
}

// MaxValueDepth is how deeply objects and arrays may nest in a value: deep
// enough for any document, shallow enough that no recursive reader
// (queries, functions, clients) can be pushed into a stack overflow.
const MaxValueDepth = 64

// depth is the deepest nesting of objects and arrays in valid, compact
// JSON.
func depth(b []byte) int {
	d, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString && c == '\\':
			i++ // skip the escaped character
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			d++
			deepest = max(deepest, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

// describeJSON names the kind of JSON value that starts with c, for error
// messages.
func describeJSON(c byte) string {
	switch {
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	}
	return "malformed JSON"
}
