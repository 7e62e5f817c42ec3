// Package member finds one top-level member of a JSON object by name,
// without decoding the members before it.
//
// A predicate over one field of a million stored objects spends most of
// its time finding that field: gjson's general path engine took ~45% of an
// unindexed COUNT's CPU (docs/performance.md, "COUNT with a predicate").
// Find first searches the text for the name's rarest byte and checks that
// nothing before the occurrence could hide a key (an escape, a bracket, an
// open string); failing that it walks the members, comparing key texts and
// jumping over values (strings to their closing quote, containers by
// counting brackets). What neither settles (a key written with an escape,
// whose text is not its name, or text that is not a JSON object) it
// reports as unsure, and the caller asks a full parser.
package member

import "strings"

// Find returns the raw text of the first member of the JSON object obj
// named name (without surrounding white space), and found. sure is false
// when the scan met something it does not decide (an escaped key before
// the member, or malformed text): then neither value nor found means
// anything and the caller must parse obj in full.
func Find(obj, name string) (value string, found, sure bool) {
	return NewName(name).Find(obj)
}

// Name is a member name prepared for finding in many objects.
type Name struct {
	name string
	rare int // rarest(name)
}

// NewName prepares name for Find.
func NewName(name string) Name { return Name{name: name, rare: rarest(name)} }

// Find is Find(obj, n's name).
func (n Name) Find(obj string) (value string, found, sure bool) {
	if v, found, sure := search(obj, n.name, n.rare); sure {
		return v, found, true
	}
	return scan(obj, n.name)
}

// search finds name by searching the text for it rather than walking the
// members: a vectorized search over a 200-byte object costs a fraction of
// a walk. It searches for the name's rarest byte, name[k] (a search for its first
// stops at every word that starts alike), and an occurrence is the member
// when it is quoted, followed by a colon, and nothing before it could hide
// a key: no backslash (so no escaped key or quote), an even number of
// quotes (so the occurrence opens a string), and no bracket after the
// opening one (so it is at the top level). It is not sure otherwise, and
// scan decides.
func search(obj, name string, k int) (value string, found, sure bool) {
	if len(obj) == 0 || obj[0] != '{' || k < 0 {
		return "", false, false
	}
	for from := 2 + k; from < len(obj); {
		q := strings.IndexByte(obj[from:], name[k])
		if q < 0 {
			break
		}
		p := from + q - k // where the name would start
		from += q + 1
		end := p + len(name)
		if end >= len(obj) || obj[p:end] != name || obj[p-1] != '"' || obj[end] != '"' {
			continue // not the name, or part of a longer text
		}
		before := obj[1 : p-1]
		if strings.IndexByte(before, '\\') >= 0 || strings.IndexByte(before, '{') >= 0 ||
			strings.IndexByte(before, '[') >= 0 || strings.Count(before, `"`)%2 != 0 {
			return "", false, false
		}
		i := skipSpace(obj, end+1)
		if i >= len(obj) {
			return "", false, false
		}
		if obj[i] != ':' {
			continue // a string value
		}
		start := skipSpace(obj, i+1)
		stop := skipValue(obj, start)
		if stop < 0 {
			return "", false, false
		}
		return obj[start:stop], true, true
	}
	// A key spelt with escapes would not show its name.
	return "", false, strings.IndexByte(obj, '\\') < 0
}

// rarest is the index of the byte of name least likely to occur in JSON
// text: an upper-case letter (member names are camelCase, words are not),
// else the rarest lower-case letter by English letter frequency, else the
// first byte. It is -1 for an empty name and for one with a quote or a
// backslash, which search leaves to scan: such a name could match across
// two strings' texts.
func rarest(name string) int {
	// rarity of 'a'..'z': 'A' for e, the most frequent, to 'Z' for z.
	const rarity = "CTLKAOQIEXVJNFDPYHGBMURWSZ"
	best, rank := -1, byte(0)
	for i := 0; i < len(name); i++ {
		c, r := name[i], byte(0)
		switch {
		case c == '"' || c == '\\':
			return -1
		case c >= 'A' && c <= 'Z':
			r = 'z' // rarer than any lower-case letter
		case c >= 'a' && c <= 'z':
			r = rarity[c-'a']
		}
		if best < 0 || r > rank {
			best, rank = i, r
		}
	}
	return best
}

// scan walks the members of obj in order (see Find).
func scan(obj, name string) (value string, found, sure bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return "", false, false
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return "", false, true
	}
	for i < len(obj) {
		if obj[i] != '"' {
			return "", false, false
		}
		// Keys are short: a byte loop finds the end sooner than a
		// search call, and sees an escape on the way.
		end := i + 1
		for end < len(obj) && obj[end] != '"' && obj[end] != '\\' {
			end++
		}
		if end >= len(obj) || obj[end] == '\\' {
			return "", false, false
		}
		key := obj[i+1 : end]
		i = skipSpace(obj, end+1)
		if i >= len(obj) || obj[i] != ':' {
			return "", false, false
		}
		start := skipSpace(obj, i+1)
		stop := skipValue(obj, start)
		if stop < 0 {
			return "", false, false
		}
		if key == name {
			return obj[start:stop], true, true
		}
		i = skipSpace(obj, stop)
		if i >= len(obj) {
			return "", false, false
		}
		switch obj[i] {
		case '}':
			return "", false, true
		case ',':
			i = skipSpace(obj, i+1)
		default:
			return "", false, false
		}
	}
	return "", false, false
}

// skipSpace is the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t') {
		i++
	}
	return i
}

// closingQuote is the index of the quote that ends the string whose text
// starts at i (just after its opening quote), or -1.
func closingQuote(s string, i int) int {
	for {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			return -1
		}
		q += i
		// The quote is escaped when an odd number of backslashes
		// precede it.
		n := 0
		for j := q - 1; j >= i && s[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		i = q + 1
	}
}

// skipValue is the index just past the JSON value that starts at i, or -1
// when the text there is not one the scan can skip.
func skipValue(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		q := closingQuote(s, i+1)
		if q < 0 {
			return -1
		}
		return q + 1
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				q := closingQuote(s, j+1)
				if q < 0 {
					return -1
				}
				j = q
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	// A number, true, false or null: up to the next delimiter.
	j := i
	for j < len(s) {
		switch s[j] {
		case ',', '}', ']', ' ', '\n', '\r', '\t':
			if j == i {
				return -1
			}
			return j
		}
		j++
	}
	return -1
}
