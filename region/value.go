package region

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// NormalizeValue checks that raw is one JSON object and returns it compacted.
// Compacting removes insignificant whitespace only: member order, number
// spelling (10.0 stays 10.0, big integers keep every digit) and string escapes
// are kept, so a value reads back exactly as it was sent.
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
	var buf bytes.Buffer
	buf.Grow(len(trimmed))
	if err := json.Compact(&buf, trimmed); err != nil {
		return nil, fmt.Errorf("%w: malformed JSON: %v", ErrInvalid, err)
	}
	return json.RawMessage(buf.Bytes()), nil
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
