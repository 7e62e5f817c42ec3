// Package scalar is the API's typed scalars as text, for package client:
// a Go scalar's API type and text ({"@type":"long","@value":"5"}), and
// their OQL literals, which the client writes into an ad-hoc query's
// text since that endpoint takes no bind values (the rules of cli/scalar,
// which the client may not import). It is pure text: the standard
// library only, no I/O.
package scalar

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrInvalid is a value or query text refused; the client wraps it into
// its ErrInvalidArgument.
var ErrInvalid = errors.New("invalid bind value")

// Of is a Go scalar's API type and text: int and int64 long, int32 int,
// int16 short, int8 byte, float64 double, float32 float, string, bool
// boolean; nil is null (a null string). ok is false for anything else,
// which the members would answer with a 500.
func Of(v any) (typ, text string, null, ok bool) {
	i := func(typ string, n int64) (string, string, bool, bool) {
		return typ, strconv.FormatInt(n, 10), false, true
	}
	switch x := v.(type) {
	case nil:
		return "string", "", true, true
	case string:
		return "string", x, false, true
	case bool:
		return "boolean", strconv.FormatBool(x), false, true
	case int:
		return i("long", int64(x))
	case int64:
		return i("long", x)
	case int32:
		return i("int", int64(x))
	case int16:
		return i("short", int64(x))
	case int8:
		return i("byte", int64(x))
	case float64:
		return "double", strconv.FormatFloat(x, 'g', -1, 64), false, true
	case float32:
		return "float", strconv.FormatFloat(float64(x), 'g', -1, 32), false, true
	}
	return "", "", false, false
}

// Literal is a typed value as an OQL literal that the members' parser
// reads back as the value the API would bind: integers as digits, past
// the int range with L; doubles with a point, exponent or d; floats with
// f; strings quoted, ' doubled. A negative number is parenthesized, so
// that "x - $1" stays a subtraction.
func Literal(typ, text string, null bool) (string, error) {
	if null {
		return "NULL", nil
	}
	bad := fmt.Errorf("%w: %q is not a %s", ErrInvalid, text, typ)
	trimmed := strings.TrimSpace(text)
	var lit string
	switch name := strings.TrimPrefix(strings.ToLower(typ), "java.lang."); name {
	case "byte", "short", "int", "long":
		n, err := strconv.ParseInt(trimmed, 10, 64)
		switch {
		case err != nil:
			return "", bad
		case n == math.MinInt64:
			return "(-9223372036854775807L - 1)", nil
		case n > math.MaxInt32 || n < math.MinInt32:
			lit = strconv.FormatInt(n, 10) + "L"
		default:
			lit = strconv.FormatInt(n, 10)
		}
	case "float", "double":
		bits := map[string]int{"float": 32, "double": 64}[name]
		f, err := strconv.ParseFloat(trimmed, bits)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return "", bad
		}
		lit = strconv.FormatFloat(f, 'g', -1, bits)
		if bits == 32 {
			lit += "f"
		} else if !strings.ContainsAny(lit, ".e") {
			lit += "d"
		}
	case "boolean":
		b, err := strconv.ParseBool(strings.ToLower(trimmed))
		if err != nil {
			return "", bad
		}
		return strconv.FormatBool(b), nil
	case "string":
		return "'" + strings.ReplaceAll(text, "'", "''") + "'", nil
	default:
		return "", fmt.Errorf("%w: unknown type %q (byte, short, int, long, float, double, boolean or string)", ErrInvalid, typ)
	}
	if strings.HasPrefix(lit, "-") {
		return "(" + lit + ")", nil
	}
	return lit, nil
}

// Substitute writes n bind values into an ad-hoc query's text: each $k
// becomes literal(k-1). A $ inside a string literal, a quoted name or a
// comment is text. The values must be exactly as many as the highest
// parameter, as for a named query.
func Substitute(text string, n int, literal func(i int) (string, error)) (string, error) {
	var b strings.Builder
	highest := 0
	for i := 0; i < len(text); {
		skip := 1 // bytes copied as they are
		switch rest := text[i:]; {
		case rest[0] == '\'' || rest[0] == '"':
			skip = len(rest)
			for j := 1; j < len(rest); j++ {
				if rest[j] == rest[0] && (rest[0] == '"' || j+1 == len(rest) || rest[j+1] != '\'') {
					skip = j + 1
					break
				} else if rest[j] == rest[0] {
					j++ // '' is a quote inside the string
				}
			}
		case strings.HasPrefix(rest, "--"), strings.HasPrefix(rest, "/*"):
			end, endLen := "\n", 0
			if rest[0] == '/' {
				end, endLen = "*/", 2
			}
			if skip = len(rest); strings.Contains(rest[2:], end) {
				skip = 2 + strings.Index(rest[2:], end) + endLen
			}
		case rest[0] == '$':
			j := 1
			for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
				j++
			}
			k, err := strconv.Atoi(rest[1:j])
			if err != nil || k < 1 {
				break // not a parameter: the members' parser says what it is
			}
			if k > n {
				return "", fmt.Errorf("%w: the query uses $%d but %d bind value(s) were given", ErrInvalid, k, n)
			}
			lit, err := literal(k - 1)
			if err != nil {
				return "", fmt.Errorf("bind value %d: %w", k, err)
			}
			highest = max(highest, k)
			b.WriteString(lit)
			i += j
			continue
		}
		b.WriteString(text[i : i+skip])
		i += skip
	}
	if highest != n {
		return "", fmt.Errorf("%w: %d bind value(s) for a query whose parameters go up to $%d", ErrInvalid, n, highest)
	}
	return b.String(), nil
}
