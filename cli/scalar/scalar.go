package scalar

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Value is a typed value from the command line, TYPE:VALUE: a bind value
// of a query (--bind int:5) or a scalar argument of a function
// (--arg string:x). The types are the API's bind types.
type Value struct {
	typ  string // byte, short, int, long, float, double, boolean or string
	text string // the value as given
}

// Parse reads TYPE:VALUE, given to the flag named flag, and checks that
// VALUE is a TYPE, so that a typo is the command line's fault rather than a
// query's failure on the server (500). The type is case-insensitive and
// may carry Java's java.lang. prefix, as the API allows.
func Parse(flag, s string) (Value, error) {
	typ, text, ok := strings.Cut(s, ":")
	if !ok {
		return Value{}, fmt.Errorf("--%s %q: want TYPE:VALUE, e.g. int:5 or string:abc", flag, s)
	}
	v := Value{typ: strings.TrimPrefix(strings.ToLower(strings.TrimSpace(typ)), "java.lang."), text: text}
	bad := func() error {
		return fmt.Errorf("--%s %q: %q is not a valid %s", flag, s, text, v.typ)
	}
	switch v.typ {
	case "byte", "short", "int", "long":
		bits := map[string]int{"byte": 8, "short": 16, "int": 32, "long": 64}[v.typ]
		if _, err := strconv.ParseInt(text, 10, bits); err != nil {
			return Value{}, bad()
		}
	case "float", "double":
		bits := 64
		if v.typ == "float" {
			bits = 32
		}
		f, err := strconv.ParseFloat(text, bits)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return Value{}, bad()
		}
	case "boolean":
		if t := strings.ToLower(text); t != "true" && t != "false" {
			return Value{}, bad()
		}
	case "string":
	default:
		return Value{}, fmt.Errorf("--%s %q: unknown type %q (use byte, short, int, long, float, double, boolean or string)", flag, s, typ)
	}
	return v, nil
}

// ParseAll reads every TYPE:VALUE of a repeated flag.
func ParseAll(flag string, values []string) ([]Value, error) {
	out := make([]Value, 0, len(values))
	for _, s := range values {
		v, err := Parse(flag, s)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Typed is the API's form of a value, {"@type":"int","@value":"5"}: the
// value's text form, which the API reads by the type.
type Typed struct {
	Type  string `json:"@type"`
	Value string `json:"@value"`
}

// Typed is v in the API's form.
func (v Value) Typed() Typed { return Typed{Type: v.typ, Value: v.text} }

// JSON is values as the API's JSON array of typed values.
func JSON(values []Value) []byte {
	typed := make([]Typed, len(values))
	for i, v := range values {
		typed[i] = v.Typed()
	}
	data, _ := json.Marshal(typed) // strings only: it cannot fail
	return data
}

// Literal is the value as an OQL literal that the server's parser reads
// back as the very value the API would bind: integers as plain digits
// (an int literal is a 64-bit integer as every integral bind is; past the
// int range with L), doubles always with a decimal point, exponent or d,
// floats with f, strings quoted with ' doubled. A negative number is
// parenthesized, so that "x - $1" stays a subtraction.
func (v Value) Literal() string {
	var lit string
	switch v.typ {
	case "byte", "short", "int", "long":
		n, _ := strconv.ParseInt(v.text, 10, 64)
		switch {
		case n == math.MinInt64:
			return "(-9223372036854775807L - 1)"
		case n > math.MaxInt32 || n < math.MinInt32:
			lit = strconv.FormatInt(n, 10) + "L"
		default:
			lit = strconv.FormatInt(n, 10)
		}
	case "float":
		f, _ := strconv.ParseFloat(v.text, 32)
		lit = strconv.FormatFloat(f, 'g', -1, 32) + "f"
	case "double":
		f, _ := strconv.ParseFloat(v.text, 64)
		lit = strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(lit, ".e") {
			lit += "d"
		}
	case "boolean":
		return strings.ToLower(v.text)
	default:
		return "'" + strings.ReplaceAll(v.text, "'", "''") + "'"
	}
	if strings.HasPrefix(lit, "-") {
		return "(" + lit + ")"
	}
	return lit
}

// Substitute writes the bind values into an ad-hoc query's text:
// the API's ad-hoc endpoint takes none (rest-details.md), so $1, $2, ...
// become literals of the values' types. A $ inside a string literal, a
// quoted identifier or a comment is text, not a parameter, and stays. The
// values must be exactly as many as the highest parameter, as for a named
// query.
func Substitute(text string, binds []Value) (string, error) {
	var b strings.Builder
	highest := 0
	for i := 0; i < len(text); {
		c := text[i]
		var skip int // bytes to copy as they are
		switch {
		case c == '\'' || c == '"':
			skip = quotedEnd(text, i, c) - i
		case strings.HasPrefix(text[i:], "--"):
			skip = lineEnd(text, i) - i
		case strings.HasPrefix(text[i:], "/*"):
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				skip = len(text) - i
			} else {
				skip = end + 4
			}
		case c == '$':
			j := i + 1
			for j < len(text) && text[j] >= '0' && text[j] <= '9' {
				j++
			}
			n, err := strconv.Atoi(text[i+1 : j])
			if err != nil || n < 1 {
				skip = 1 // not a parameter: the server's parser says what it is
				break
			}
			if n > len(binds) {
				return "", fmt.Errorf("the query uses $%d but %d --bind value(s) were given", n, len(binds))
			}
			highest = max(highest, n)
			b.WriteString(binds[n-1].Literal())
			i = j
			continue
		default:
			skip = 1
		}
		b.WriteString(text[i : i+skip])
		i += skip
	}
	if highest != len(binds) {
		return "", fmt.Errorf("%d --bind value(s) were given for a query whose parameters go up to $%d", len(binds), highest)
	}
	return b.String(), nil
}

// quotedEnd is the index just past the quoted text starting at i with
// quote q (two quotes in a row stand for one), or the end of text.
func quotedEnd(text string, i int, q byte) int {
	for j := i + 1; j < len(text); j++ {
		if text[j] != q {
			continue
		}
		if j+1 < len(text) && text[j+1] == q && q == '\'' {
			j++
			continue
		}
		return j + 1
	}
	return len(text)
}

// lineEnd is the index of the newline ending the line at i, or the end.
func lineEnd(text string, i int) int {
	if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(text)
}
