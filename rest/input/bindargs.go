package input

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/kvnode/kvnode/region"
)

// BindArg is one bind value of a named query's body, {"@type","@value"}:
// the type is Geode's (int, String, ...) and the value a JSON scalar as
// sent. Turning it into a query parameter is oql.Bind's, whose failure is
// the query's (500), not the body's.
type BindArg struct {
	Type  string
	Value json.RawMessage
}

// ParseBindArgs reads the body of POST /kv/v1/queries/{id}: a JSON array
// of flat {"@type","@value"} objects (a single object counts as one
// argument; an empty body is none). Anything else is the client's mistake.
func ParseBindArgs(body []byte) ([]BindArg, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, nil
	}
	var raws []json.RawMessage
	switch body[0] {
	case '[':
		if err := json.Unmarshal(body, &raws); err != nil {
			return nil, fmt.Errorf("%w: the bind values are not a JSON array: %v", region.ErrInvalid, err)
		}
	case '{':
		raws = []json.RawMessage{body}
	default:
		return nil, fmt.Errorf("%w: the body must be a JSON array of {\"@type\",\"@value\"} objects", region.ErrInvalid)
	}
	args := make([]BindArg, len(raws))
	for i, raw := range raws {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%w: bind value %d is not a JSON object", region.ErrInvalid, i+1)
		}
		var typ string
		if err := json.Unmarshal(m["@type"], &typ); err != nil || m["@type"] == nil {
			return nil, fmt.Errorf("%w: bind value %d needs a string \"@type\"", region.ErrInvalid, i+1)
		}
		v := bytes.TrimSpace(m["@value"])
		if len(v) > 0 && (v[0] == '[' || v[0] == '{') {
			return nil, fmt.Errorf("%w: bind value %d: \"@value\" must be a scalar, not an array or object", region.ErrInvalid, i+1)
		}
		for k := range m {
			if k != "@type" && k != "@value" {
				return nil, fmt.Errorf("%w: bind value %d has an unknown member %q", region.ErrInvalid, i+1, k)
			}
		}
		args[i] = BindArg{Type: typ, Value: v}
	}
	return args, nil
}
