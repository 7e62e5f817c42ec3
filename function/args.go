package function

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
)

// ParseArgs reads a function's argument body (rest-api.md, Function
// argument): a JSON array of objects, or one object as the only argument.
// Each has "@type"; a scalar is in "@value", an object argument has its
// fields as members. A nested object or array inside an argument, an
// array as an argument (a collection of objects) or a missing "@type" is
// the client's mistake: region.ErrInvalid (400). An empty body is no
// arguments.
func ParseArgs(body []byte) ([]Arg, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, nil
	}
	var raws []json.RawMessage
	switch body[0] {
	case '[':
		if err := json.Unmarshal(body, &raws); err != nil {
			return nil, fmt.Errorf("%w: the arguments are not a JSON array: %v", region.ErrInvalid, err)
		}
	case '{':
		raws = []json.RawMessage{body}
	default:
		return nil, fmt.Errorf("%w: the body must be a JSON array of argument objects, each with \"@type\"", region.ErrInvalid)
	}
	args := make([]Arg, 0, len(raws))
	for i, raw := range raws {
		a, err := parseArg(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: argument %d: %v", region.ErrInvalid, i+1, err)
		}
		args = append(args, a)
	}
	return args, nil
}

// parseArg reads one argument object, keeping its members' order.
func parseArg(raw json.RawMessage) (Arg, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		if len(raw) > 0 && raw[0] == '[' {
			return Arg{}, fmt.Errorf("a collection cannot be passed as an argument")
		}
		return Arg{}, fmt.Errorf("not a JSON object with \"@type\"")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return Arg{}, err
	}
	var a Arg
	hasType, hasValue := false, false
	var value json.RawMessage
	var fields []Field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Arg{}, err
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return Arg{}, err
		}
		v = bytes.TrimSpace(v)
		if len(v) > 0 && (v[0] == '{' || v[0] == '[') {
			return Arg{}, fmt.Errorf("member %q holds a nested object or array, which an argument cannot", name)
		}
		switch name {
		case "@type":
			if err := json.Unmarshal(v, &a.Type); err != nil {
				return Arg{}, fmt.Errorf("\"@type\" must be a string")
			}
			hasType = true
		case "@value":
			value, hasValue = v, true
		default:
			s, err := scalar(v)
			if err != nil {
				return Arg{}, fmt.Errorf("member %q: %v", name, err)
			}
			fields = append(fields, Field{Name: name, Value: s})
		}
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return Arg{}, err
	}
	if !hasType || a.Type == "" {
		return Arg{}, fmt.Errorf("every argument needs a \"@type\"")
	}
	switch {
	case hasValue && len(fields) > 0:
		return Arg{}, fmt.Errorf("an argument is either a scalar in \"@value\" or an object's fields, not both")
	case hasValue:
		v, err := typedScalar(a.Type, value)
		if err != nil {
			return Arg{}, err
		}
		a.Value = v
	default:
		if fields == nil {
			fields = []Field{}
		}
		a.Fields = fields
	}
	return a, nil
}

// typedScalar converts "@value" by its "@type" when that names a Java
// scalar type (int, long, double, String...), and by its JSON kind
// otherwise.
func typedScalar(typ string, v json.RawMessage) (any, error) {
	if isScalarType(typ) {
		val, err := oql.Bind(typ, v)
		if err != nil {
			return nil, err
		}
		return val, nil
	}
	return scalar(v)
}

// isScalarType reports whether typ names a scalar type oql.Bind knows.
func isScalarType(typ string) bool {
	switch strings.TrimPrefix(strings.ToLower(typ), "java.lang.") {
	case "byte", "short", "int", "long", "float", "double", "boolean", "string":
		return true
	}
	return false
}

// scalar decodes a JSON scalar: integers as int64, other numbers as
// float64.
func scalar(v json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	if n, ok := x.(json.Number); ok {
		if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
			return i, nil
		}
		f, err := n.Float64()
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	return x, nil
}
