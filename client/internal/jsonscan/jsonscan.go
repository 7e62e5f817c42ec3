// Package jsonscan reads the members of a JSON object in one pass without
// reflection or allocation, validating the whole document by the grammar
// encoding/json applies: package client decodes each event of a watch
// with it, a million a second in kvbench's watch workload, where
// json.Unmarshal into a struct costs several times as much and a dozen
// allocations, and checks each value it writes. Anything unusual (a member name with an escape, a string
// value that is not plain) is left to encoding/json by the caller.
package jsonscan

import "unicode/utf8"

// maxDepth is encoding/json's bound on nesting: a document it refuses,
// this package refuses.
const maxDepth = 10000

// Object calls fn with each member of the object data holds, in order:
// its name as the bytes between the quotes and its value as raw JSON,
// both slices of data. It reports false, having perhaps called fn for
// some members, when data is not exactly one valid JSON object (space
// around it aside) or a member's name holds an escape or bytes that are
// not UTF-8; the caller then decodes data with encoding/json, which says
// what is wrong or what the name means.
func Object(data []byte, fn func(name, value []byte)) bool {
	s := scanner{data: data}
	s.space()
	return s.peek() == '{' && s.object(1, fn) && s.end()
}

// Valid reports whether data is exactly one JSON value (space around it
// aside), as json.Valid does, at a third of its cost: the client checks
// every value it is given to write.
func Valid(data []byte) bool {
	s := scanner{data: data}
	s.space()
	return s.value(0) && s.end()
}

// String is the text of value, a raw JSON string, when it holds no escape
// and is valid UTF-8, so that its bytes are the text itself (a slice of
// value); false otherwise: decode it with encoding/json (which also maps
// null to an unchanged string and refuses other types).
func String(value []byte) ([]byte, bool) {
	if len(value) < 2 || value[0] != '"' || value[len(value)-1] != '"' {
		return nil, false
	}
	text := value[1 : len(value)-1]
	for _, c := range text {
		if c == '\\' || c == '"' || c < 0x20 {
			return nil, false
		}
		if c >= utf8.RuneSelf {
			if !utf8.Valid(text) {
				return nil, false
			}
			break
		}
	}
	return text, true
}

// scanner walks data from i.
type scanner struct {
	data []byte
	i    int
}

// peek is the byte at i, 0 at the end.
func (s *scanner) peek() byte {
	if s.i < len(s.data) {
		return s.data[s.i]
	}
	return 0
}

// space skips JSON's white space.
func (s *scanner) space() {
	i := s.i
	for i < len(s.data) && (s.data[i] == ' ' || s.data[i] == '\t' || s.data[i] == '\n' || s.data[i] == '\r') {
		i++
	}
	s.i = i
}

// end reports whether only white space follows.
func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.data)
}

// value skips one value at nesting depth, reporting whether it is valid.
func (s *scanner) value(depth int) bool {
	switch c := s.peek(); {
	case c == '"':
		_, ok := s.string()
		return ok
	case c == '{':
		return s.object(depth+1, nil)
	case c == '[':
		return s.array(depth + 1)
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

// object skips an object nested at depth (i at its brace), calling fn,
// when not nil, with each member whose name is plain (a name that is not
// is invalid then).
func (s *scanner) object(depth int, fn func(name, value []byte)) bool {
	if depth > maxDepth {
		return false
	}
	s.i++ // {
	s.space()
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		if s.peek() != '"' {
			return false
		}
		start := s.i
		escaped, ok := s.string()
		if !ok {
			return false
		}
		name := s.data[start+1 : s.i-1]
		if fn != nil && (escaped || !utf8.Valid(name)) {
			return false
		}
		s.space()
		if s.peek() != ':' {
			return false
		}
		s.i++
		s.space()
		vstart := s.i
		if !s.value(depth) {
			return false
		}
		if fn != nil {
			fn(name, s.data[vstart:s.i])
		}
		s.space()
		switch s.peek() {
		case ',':
			s.i++
			s.space()
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// array skips an array nested at depth.
func (s *scanner) array(depth int) bool {
	if depth > maxDepth {
		return false
	}
	s.i++ // [
	s.space()
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		if !s.value(depth) {
			return false
		}
		s.space()
		switch s.peek() {
		case ',':
			s.i++
			s.space()
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// string skips a string (i at its opening quote), reporting whether it
// held an escape and whether it is valid: closed, no control character,
// escapes JSON knows. Like encoding/json, it lets bytes that are not
// UTF-8 through (decoding makes them U+FFFD; String refuses them). A
// plain loop: an event's strings are short, where bytes.IndexByte's setup
// costs more than it saves (measured: 14% of a watch's time in it).
func (s *scanner) string() (escaped, ok bool) {
	data, i := s.data, s.i+1
	for i < len(data) {
		c := data[i]
		switch {
		case c == '"':
			s.i = i + 1
			return escaped, true
		case c < 0x20:
			return escaped, false
		case c != '\\':
			i++
			continue
		}
		escaped = true
		i++ // past the backslash
		if i >= len(data) {
			return escaped, false
		}
		switch data[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i++
		case 'u':
			if i+5 > len(data) {
				return escaped, false
			}
			for _, h := range data[i+1 : i+5] {
				if !isHex(h) {
					return escaped, false
				}
			}
			i += 5
		default:
			return escaped, false
		}
	}
	return escaped, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number skips a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	if s.peek() == '-' {
		s.i++
	}
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return false
	}
	if s.peek() == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits skips one or more digits, reporting whether there was one.
func (s *scanner) digits() bool {
	i := s.i
	for i < len(s.data) && s.data[i] >= '0' && s.data[i] <= '9' {
		i++
	}
	ok := i > s.i
	s.i = i
	return ok
}

// literal skips word (true, false, null).
func (s *scanner) literal(word string) bool {
	if len(s.data)-s.i < len(word) || string(s.data[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}
