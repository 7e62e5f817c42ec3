package client

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Typed is a value with the API's type named explicitly, for a bind value
// or a function argument whose Go type would map to another API type
// (a Go int is a long, but a query may want a byte). Type is one of
// byte, short, int, long, float, double, boolean and string; Value is the
// value's text, which the members read by Type ("5", "2.5", "true").
type Typed struct {
	Type  string `json:"@type"`
	Value string `json:"@value"`
}

// typedOf maps a Go scalar to its API form: Go's integers are long (int32
// int, int16 short, int8 byte), float64 double, float32 float, string
// string and bool boolean; nil is the null of a string. Anything else is
// refused before it is sent, since the members would answer a 500.
func typedOf(v any) (t Typed, null bool, err error) {
	switch x := v.(type) {
	case nil:
		return Typed{Type: "string"}, true, nil
	case Typed:
		return x, false, nil
	case string:
		return Typed{"string", x}, false, nil
	case bool:
		return Typed{"boolean", strconv.FormatBool(x)}, false, nil
	case int:
		return Typed{"long", strconv.FormatInt(int64(x), 10)}, false, nil
	case int64:
		return Typed{"long", strconv.FormatInt(x, 10)}, false, nil
	case int32:
		return Typed{"int", strconv.FormatInt(int64(x), 10)}, false, nil
	case int16:
		return Typed{"short", strconv.FormatInt(int64(x), 10)}, false, nil
	case int8:
		return Typed{"byte", strconv.FormatInt(int64(x), 10)}, false, nil
	case uint32:
		return Typed{"long", strconv.FormatUint(uint64(x), 10)}, false, nil
	case uint16:
		return Typed{"int", strconv.FormatUint(uint64(x), 10)}, false, nil
	case uint8:
		return Typed{"short", strconv.FormatUint(uint64(x), 10)}, false, nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return Typed{}, false, fmt.Errorf("%w: %v has no OQL form", ErrInvalidArgument, x)
		}
		return Typed{"double", strconv.FormatFloat(x, 'g', -1, 64)}, false, nil
	case float32:
		if math.IsInf(float64(x), 0) || math.IsNaN(float64(x)) {
			return Typed{}, false, fmt.Errorf("%w: %v has no OQL form", ErrInvalidArgument, x)
		}
		return Typed{"float", strconv.FormatFloat(float64(x), 'g', -1, 32)}, false, nil
	}
	return Typed{}, false, fmt.Errorf("%w: a %T is not a bind value (use a Go scalar or client.Typed)", ErrInvalidArgument, v)
}

// bindJSON is values as the API's bind array, [{"@type","@value"}...].
func bindJSON(values []any) ([]byte, error) {
	out := make([]json.RawMessage, len(values))
	for i, v := range values {
		t, null, err := typedOf(v)
		if err != nil {
			return nil, fmt.Errorf("bind value %d: %w", i+1, err)
		}
		if out[i], err = scalarJSON(t, null); err != nil {
			return nil, fmt.Errorf("bind value %d: %w", i+1, err)
		}
	}
	return json.Marshal(out)
}

// scalarJSON is one typed scalar, {"@type","@value"}; @value is null for
// null.
func scalarJSON(t Typed, null bool) (json.RawMessage, error) {
	if null {
		return json.Marshal(struct {
			Type  string  `json:"@type"`
			Value *string `json:"@value"`
		}{t.Type, nil})
	}
	data, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return data, nil
}

// literal is t as an OQL literal the members' parser reads back as the
// value the API would bind (the rules of cli/scalar): integers as digits,
// past the int range with L; doubles with a point, exponent or d; floats
// with f; strings quoted with ' doubled. A negative number is
// parenthesized so that "x - $1" stays a subtraction.
func literal(t Typed, null bool) (string, error) {
	if null {
		return "NULL", nil
	}
	bad := func() error { return fmt.Errorf("%w: %q is not a %s", ErrInvalidArgument, t.Value, t.Type) }
	var lit string
	switch strings.TrimPrefix(strings.ToLower(t.Type), "java.lang.") {
	case "byte", "short", "int", "long":
		n, err := strconv.ParseInt(strings.TrimSpace(t.Value), 10, 64)
		switch {
		case err != nil:
			return "", bad()
		case n == math.MinInt64:
			return "(-9223372036854775807L - 1)", nil
		case n > math.MaxInt32 || n < math.MinInt32:
			lit = strconv.FormatInt(n, 10) + "L"
		default:
			lit = strconv.FormatInt(n, 10)
		}
	case "float", "double":
		bits := 64
		if strings.HasSuffix(strings.ToLower(t.Type), "float") {
			bits = 32
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(t.Value), bits)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return "", bad()
		}
		lit = strconv.FormatFloat(f, 'g', -1, bits)
		if bits == 32 {
			lit += "f"
		} else if !strings.ContainsAny(lit, ".e") {
			lit += "d"
		}
	case "boolean":
		b, err := strconv.ParseBool(strings.ToLower(strings.TrimSpace(t.Value)))
		if err != nil {
			return "", bad()
		}
		return strconv.FormatBool(b), nil
	case "string":
		return "'" + strings.ReplaceAll(t.Value, "'", "''") + "'", nil
	default:
		return "", fmt.Errorf("%w: unknown bind type %q (byte, short, int, long, float, double, boolean or string)", ErrInvalidArgument, t.Type)
	}
	if strings.HasPrefix(lit, "-") {
		return "(" + lit + ")", nil
	}
	return lit, nil
}

// substitute writes binds into an ad-hoc query's text as literals: the
// API's ad-hoc endpoint takes no bind values (rest-details.md), so $1,
// $2, ... become literals. A $ inside a string literal, a quoted name or a
// comment is text and stays. The values must be exactly as many as the
// highest parameter, as for a named query.
func substitute(text string, binds []any) (string, error) {
	lits := make([]string, len(binds))
	for i, v := range binds {
		t, null, err := typedOf(v)
		if err == nil {
			lits[i], err = literal(t, null)
		}
		if err != nil {
			return "", fmt.Errorf("bind value %d: %w", i+1, err)
		}
	}
	var b strings.Builder
	highest := 0
	for i := 0; i < len(text); {
		c := text[i]
		skip := 1 // bytes copied as they are
		switch {
		case c == '\'' || c == '"':
			skip = quotedEnd(text, i, c) - i
		case strings.HasPrefix(text[i:], "--"):
			skip = len(text) - i
			if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
				skip = j
			}
		case strings.HasPrefix(text[i:], "/*"):
			skip = len(text) - i
			if end := strings.Index(text[i+2:], "*/"); end >= 0 {
				skip = end + 4
			}
		case c == '$':
			j := i + 1
			for j < len(text) && text[j] >= '0' && text[j] <= '9' {
				j++
			}
			n, err := strconv.Atoi(text[i+1 : j])
			if err != nil || n < 1 {
				break // not a parameter: the members' parser says what it is
			}
			if n > len(binds) {
				return "", fmt.Errorf("%w: the query uses $%d but %d bind value(s) were given", ErrInvalidArgument, n, len(binds))
			}
			highest = max(highest, n)
			b.WriteString(lits[n-1])
			i = j
			continue
		}
		b.WriteString(text[i : i+skip])
		i += skip
	}
	if highest != len(binds) {
		return "", fmt.Errorf("%w: %d bind value(s) were given for a query whose parameters go up to $%d", ErrInvalidArgument, len(binds), highest)
	}
	return b.String(), nil
}

// quotedEnd is the index just past the quoted text starting at i with
// quote q (two single quotes in a row stand for one), or the end of text.
func quotedEnd(text string, i int, q byte) int {
	for j := i + 1; j < len(text); j++ {
		if text[j] != q {
			continue
		}
		if q == '\'' && j+1 < len(text) && text[j+1] == '\'' {
			j++
			continue
		}
		return j + 1
	}
	return len(text)
}

// results decodes a query's or function's answer, a JSON array.
func results(body []byte, what string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, &decodeError{what: what, err: err}
	}
	if out == nil {
		out = []json.RawMessage{}
	}
	return out, nil
}

// Query runs an ad-hoc OQL query (GET /kv/v1/queries/adhoc; DATA:READ on
// its regions) and returns its result rows as they came. binds are the
// values of $1, $2, ...: Go scalars (see Typed for their API types) or
// Typed values. The ad-hoc endpoint takes no bind values, so they are
// written into the text as OQL literals of their types, which the members
// read back as the same values a named query would bind.
//
// A query that does not parse or fails while running is an *Error with
// status 500 (the API's rule for a query's own failure).
func (c *Client) Query(ctx context.Context, oql string, binds ...any) ([]json.RawMessage, error) {
	text, err := substitute(oql, binds)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	resp, err := c.do(ctx, &request{method: http.MethodGet, path: "/kv/v1/queries/adhoc", query: url.Values{"q": {text}}, idempotent: true})
	if err != nil {
		return nil, err
	}
	return results(resp.body, "query's results")
}

// NamedQuery is a query stored in the cluster under an id, run with bind
// values by Queries.Run.
type NamedQuery struct {
	ID  string `json:"id"`
	OQL string `json:"oql"`
}

// Queries is the handle on the named queries. It is a separate type, not
// methods of Client, so that Client stays a short list of entry points.
type Queries struct{ c *Client }

// Queries returns the handle on the named queries.
func (c *Client) Queries() *Queries { return &Queries{c: c} }

// queryPath is /kv/v1/queries[/{id}].
func queryPath(id string) string {
	if id == "" {
		return "/kv/v1/queries"
	}
	return "/kv/v1/queries/" + url.PathEscape(id)
}

// List is every named query.
func (q *Queries) List(ctx context.Context) ([]NamedQuery, error) {
	var doc struct {
		Queries []NamedQuery `json:"queries"`
	}
	if err := q.c.getJSON(ctx, queryPath(""), nil, "named queries", &doc); err != nil {
		return nil, err
	}
	return doc.Queries, nil
}

// Create stores oql as the named query id. The text is checked first: a
// syntax error is ErrInvalid. An existing id is ErrConflict, with the
// stored query as the *Error's Current ({"id","oql"}).
func (q *Queries) Create(ctx context.Context, id, oql string) error {
	if id == "" {
		return fmt.Errorf("%w: a named query needs an id", ErrInvalidArgument)
	}
	_, err := q.c.do(ctx, &request{method: http.MethodPost, path: queryPath(""), query: url.Values{"id": {id}, "q": {oql}}})
	return err
}

// Update replaces the text of the named query id; ErrNotFound when there
// is none, ErrInvalid for a syntax error.
func (q *Queries) Update(ctx context.Context, id, oql string) error {
	if id == "" {
		return fmt.Errorf("%w: a named query needs an id", ErrInvalidArgument)
	}
	_, err := q.c.do(ctx, &request{method: http.MethodPut, path: queryPath(id), query: url.Values{"q": {oql}}, idempotent: true})
	return err
}

// Delete removes the named query id; ErrNotFound when there is none.
func (q *Queries) Delete(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("%w: a named query needs an id", ErrInvalidArgument)
	}
	_, err := q.c.do(ctx, &request{method: http.MethodDelete, path: queryPath(id)})
	return err
}

// Run runs the named query id with binds as $1, $2, ... (Go scalars or
// Typed values, sent as the API's {"@type","@value"} array) and returns
// its result rows. ErrNotFound when there is no such query; a wrong
// number of bind values, or one the query cannot use, is an *Error with
// status 500, the API's answer to a query's failure.
func (q *Queries) Run(ctx context.Context, id string, binds ...any) ([]json.RawMessage, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: a named query needs an id", ErrInvalidArgument)
	}
	body, err := bindJSON(binds)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", id, err)
	}
	// Running a query reads: sending it twice is harmless.
	resp, err := q.c.do(ctx, &request{method: http.MethodPost, path: queryPath(id), body: body, idempotent: true})
	if err != nil {
		return nil, err
	}
	return results(resp.body, "query's results")
}
