package watch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/input"
)

// request is what a client asked of GET /kv/v1/watch, checked.
type request struct {
	region  string   // the region parameter, "" when absent
	keys    []string // keys=, nil when absent
	prefix  string   // prefix=
	byPfx   bool     // prefix= was given
	query   string   // query= (a named query's id)
	text    string   // q= (OQL), or the named query's text once resolved
	binds   []any    // binds=, bound
	initial bool
	from    string // Last-Event-ID, else from=
}

// cq reports whether the request watches a continuous query.
func (r *request) cq() bool { return r.text != "" || r.query != "" }

// parseRequest reads the query parameters and Last-Event-ID. Every refusal
// wraps region.ErrInvalid (400).
func parseRequest(hr *http.Request) (*request, error) {
	params := hr.URL.Query()
	get := func(name string) (string, bool) {
		vs, ok := params[name]
		if !ok || len(vs) == 0 {
			return "", false
		}
		return vs[0], true
	}
	r := &request{}
	var ok bool
	if r.region, ok = get("region"); ok && r.region == "" {
		return nil, fmt.Errorf("%w: the URL parameter region is empty", region.ErrInvalid)
	}
	if v, ok := get("keys"); ok {
		keys, err := input.ParseKeys(v)
		if err != nil {
			return nil, err
		}
		r.keys = keys
	}
	r.prefix, r.byPfx = get("prefix")
	if r.keys != nil && r.byPfx {
		return nil, fmt.Errorf("%w: keys and prefix cannot be used together", region.ErrInvalid)
	}
	q, hasQ := get("q")
	r.query, ok = get("query")
	switch {
	case hasQ && ok:
		return nil, fmt.Errorf("%w: q and query cannot be used together", region.ErrInvalid)
	case hasQ && strings.TrimSpace(q) == "":
		return nil, fmt.Errorf("%w: the URL parameter q (the OQL text) is empty", region.ErrInvalid)
	case ok && r.query == "":
		return nil, fmt.Errorf("%w: the URL parameter query (a named query's id) is empty", region.ErrInvalid)
	case !hasQ && !ok && r.region == "":
		return nil, fmt.Errorf("%w: say what to watch: the URL parameter region, q (a continuous query) or query (a named one)", region.ErrInvalid)
	}
	r.text = q
	if v, ok := get("binds"); ok {
		if !r.cq() {
			return nil, fmt.Errorf("%w: binds are the bind values of q or query, and neither was given", region.ErrInvalid)
		}
		binds, err := parseBinds(v)
		if err != nil {
			return nil, err
		}
		r.binds = binds
	}
	v, ok := get("initial")
	initial, err := input.ParseFlag("initial", v, ok)
	if err != nil {
		return nil, err
	}
	r.initial = initial
	r.from, _ = get("from")
	// A browser's EventSource resends the last id it saw when it
	// reconnects, with the URL it first opened: the header is the newer.
	if id := hr.Header.Get("Last-Event-ID"); id != "" {
		r.from = id
	}
	return r, nil
}

// parseBinds reads binds=: a JSON array whose elements are bind values in
// the query API's form ({"@type":"int","@value":5}) or plain JSON scalars
// (5, 2.5, "x", true, null), which bind as long or double, string and
// boolean.
func parseBinds(s string) ([]any, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(s), &raws); err != nil {
		return nil, fmt.Errorf("%w: binds is not a JSON array: %v", region.ErrInvalid, err)
	}
	out := make([]any, len(raws))
	for i, raw := range raws {
		raw = bytes.TrimSpace(raw)
		var typ string
		switch {
		case len(raw) == 0:
			return nil, fmt.Errorf("%w: bind value %d is empty", region.ErrInvalid, i+1)
		case raw[0] == '{':
			args, err := input.ParseBindArgs(raw)
			if err != nil {
				return nil, err
			}
			typ, raw = args[0].Type, args[0].Value
		case raw[0] == '"':
			typ = "string"
		case raw[0] == 't' || raw[0] == 'f':
			typ = "boolean"
		case bytes.Equal(raw, []byte("null")):
			continue // nil
		case raw[0] == '[':
			return nil, fmt.Errorf("%w: bind value %d is an array; bind values are scalars", region.ErrInvalid, i+1)
		case bytes.ContainsAny(raw, ".eE"):
			typ = "double"
		default:
			typ = "long"
		}
		v, err := oql.Bind(typ, raw)
		if err != nil {
			return nil, fmt.Errorf("%w: bind value %d: %v", region.ErrInvalid, i+1, err)
		}
		out[i] = v
	}
	return out, nil
}
