package oql

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bind converts a REST bind value, {"@type": typ, "@value": value}, to a
// query parameter (rest-details.md): typ is byte, short, int, long, float,
// double, boolean or string, case-insensitive, with an optional java.lang.
// prefix; value is a JSON scalar or its text ("2" and 2 both bind an int).
// Every failure wraps ErrBind.
func Bind(typ string, value json.RawMessage) (any, error) {
	name := strings.ToLower(typ)
	name = strings.TrimPrefix(name, "java.lang.")
	text, isNull, err := bindText(value)
	if err != nil {
		return nil, err
	}
	if isNull {
		switch name {
		case "byte", "short", "int", "long", "float", "double", "boolean", "string":
			return nil, nil
		}
	}
	switch name {
	case "byte", "short", "int", "long":
		bits := map[string]int{"byte": 8, "short": 16, "int": 32, "long": 64}[name]
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, bits)
		if err != nil {
			return nil, fmt.Errorf("%w: %q is not a %s", ErrBind, text, name)
		}
		return n, nil
	case "float", "double":
		bits := 64
		if name == "float" {
			bits = 32
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(text), bits)
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%w: %q is not a %s", ErrBind, text, name)
		}
		if name == "float" {
			return float32(f), nil
		}
		return f, nil
	case "boolean":
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("%w: %q is not a boolean", ErrBind, text)
	case "string":
		return text, nil
	}
	return nil, fmt.Errorf("%w: unknown @type %q (use byte, short, int, long, float, double, boolean or string)", ErrBind, typ)
}

// bindText returns a bind value's text: a JSON string's content, a
// number's or boolean's literal text. Arrays and objects are refused.
func bindText(v json.RawMessage) (text string, isNull bool, err error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", true, nil
	}
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", false, fmt.Errorf("%w: @value is not valid JSON", ErrBind)
		}
		return s, false, nil
	case '[', '{':
		return "", false, fmt.Errorf("%w: @value must be a scalar, not an array or object", ErrBind)
	case 'n':
		return "", true, nil
	}
	return string(v), false, nil
}
