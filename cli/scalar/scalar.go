package scalar

import (
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
