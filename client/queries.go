package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/kvnode/kvnode/client/internal/scalar"
)

// Typed is a bind value or function argument with its API type named
// (byte, short, int, long, float, double, boolean or string), for when the
// Go type's would not do; Value is its text, read by Type.
type Typed struct {
	Type  string `json:"@type"`
	Value string `json:"@value"`
}

// typed is a Go scalar (internal/scalar.Of) or Typed in the API's terms.
func typed(v any) (t Typed, null bool, err error) {
	if x, ok := v.(Typed); ok {
		return x, false, nil
	}
	typ, text, null, ok := scalar.Of(v)
	if !ok {
		return Typed{}, false, fmt.Errorf("%w: a %T is not a scalar (use a Go scalar or client.Typed)", ErrInvalidArgument, v)
	}
	return Typed{typ, text}, null, nil
}

// scalarJSON is a Go scalar or Typed value as the API's {"@type","@value"}.
func scalarJSON(v any) (json.RawMessage, error) {
	t, null, err := typed(v)
	if err != nil {
		return nil, err
	}
	if null {
		return json.Marshal(map[string]any{"@type": t.Type, "@value": nil})
	}
	return json.Marshal(t)
}

// substitute writes binds into an ad-hoc query's text as OQL literals.
func substitute(text string, binds []any) (string, error) {
	s, err := scalar.Substitute(text, len(binds), func(i int) (string, error) {
		t, null, err := typed(binds[i])
		if err != nil {
			return "", err
		}
		return scalar.Literal(t.Type, t.Value, null)
	})
	if errors.Is(err, scalar.ErrInvalid) {
		err = fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return s, err
}

// results decodes a query's or function's answer, a JSON array.
func results(body []byte, what string) ([]json.RawMessage, error) {
	out := []json.RawMessage{}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, &decodeError{what: what, err: err}
	}
	return out, nil
}

// Query runs an ad-hoc OQL query (DATA:READ on its regions) and returns
// its rows as they came. binds are $1, $2, ...: Go scalars or Typed
// values. The API's ad-hoc endpoint takes no bind values, so they are
// written into the text as OQL literals, which the members read back as
// the values a named query would bind. A query that does not parse or
// fails is an *Error with status 500, as the API answers it.
func (c *Client) Query(ctx context.Context, oql string, binds ...any) ([]json.RawMessage, error) {
	return c.QueryWith(ctx, oql, binds)
}

// QueryWith is Query with options: Stale() runs it on the replicas of the
// member that answers, possibly behind the latest writes, instead of
// linearizably (other options do not apply to a query and are ignored).
func (c *Client) QueryWith(ctx context.Context, oql string, binds []any, opts ...Option) ([]json.RawMessage, error) {
	text, err := substitute(oql, binds)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	q := url.Values{"q": {text}}
	if collect(opts).stale {
		q.Set("consistency", "stale")
	}
	resp, err := c.do(ctx, &request{method: http.MethodGet, path: "/kv/v1/queries/adhoc", query: q, idempotent: true})
	if err != nil {
		return nil, err
	}
	return results(resp.body, "query's results")
}

// NamedQuery is a query stored under an id.
type NamedQuery struct {
	ID  string `json:"id"`
	OQL string `json:"oql"`
}

// Queries is the handle on the named queries, a type of its own to keep
// Client a short list.
type Queries struct{ c *Client }

// Queries returns the handle on the named queries.
func (c *Client) Queries() *Queries { return &Queries{c: c} }

// path is /kv/v1/queries[/{id}].
func (q *Queries) path(id string) string {
	return strings.TrimSuffix("/kv/v1/queries/"+url.PathEscape(id), "/")
}

// named refuses an empty name before anything is sent: its path would be
// another route's.
func named(what, name string) error {
	if name == "" {
		return fmt.Errorf("%w: no %s given", ErrInvalidArgument, what)
	}
	return nil
}

// call sends r, which must name what (name).
func call(ctx context.Context, c *Client, what, name string, r *request) (*response, error) {
	if err := named(what, name); err != nil {
		return nil, err
	}
	return c.do(ctx, r)
}

// List is every named query.
func (q *Queries) List(ctx context.Context) ([]NamedQuery, error) {
	var doc struct {
		Queries []NamedQuery `json:"queries"`
	}
	err := q.c.getJSON(ctx, q.path(""), nil, "named queries", &doc)
	return doc.Queries, err
}

// Create stores oql as the named query id. A syntax error is ErrInvalid;
// an existing id is ErrConflict, the stored query ({"id","oql"}) in the
// *Error's Current.
func (q *Queries) Create(ctx context.Context, id, oql string) error {
	_, err := call(ctx, q.c, "query id", id, &request{method: http.MethodPost, path: q.path(""), query: url.Values{"id": {id}, "q": {oql}}})
	return err
}

// Update replaces the named query's text; ErrNotFound when there is no
// such query, ErrInvalid for a syntax error.
func (q *Queries) Update(ctx context.Context, id, oql string) error {
	_, err := call(ctx, q.c, "query id", id, &request{method: http.MethodPut, path: q.path(id), query: url.Values{"q": {oql}}, idempotent: true})
	return err
}

// Delete removes the named query; ErrNotFound when there is none.
func (q *Queries) Delete(ctx context.Context, id string) error {
	_, err := call(ctx, q.c, "query id", id, &request{method: http.MethodDelete, path: q.path(id)})
	return err
}

// Run runs the named query with binds as $1, $2, ... (Go scalars or Typed
// values) and returns its rows; ErrNotFound when there is no such query.
// Bind values it cannot use (too few or many, a wrong type) are an *Error
// with status 500, as the API answers a query's failure. A run reads: it
// is sent again while it may.
func (q *Queries) Run(ctx context.Context, id string, binds ...any) ([]json.RawMessage, error) {
	return q.RunWith(ctx, id, binds)
}

// RunWith is Run with options: Stale(), as for Client.QueryWith.
func (q *Queries) RunWith(ctx context.Context, id string, binds []any, opts ...Option) ([]json.RawMessage, error) {
	var params url.Values
	if collect(opts).stale {
		params = url.Values{"consistency": {"stale"}}
	}
	args := make([]json.RawMessage, len(binds))
	for i, v := range binds {
		var err error
		if args[i], err = scalarJSON(v); err != nil {
			return nil, fmt.Errorf("query %s: bind value %d: %w", id, i+1, err)
		}
	}
	body, _ := json.Marshal(args) // raw JSON values: it cannot fail
	resp, err := call(ctx, q.c, "query id", id, &request{method: http.MethodPost, path: q.path(id), query: params, body: body, idempotent: true})
	if err != nil {
		return nil, err
	}
	return results(resp.body, "query's results")
}
