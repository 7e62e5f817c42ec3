package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Functions is the handle on server-side functions: the built-in ones
// and the JavaScript ones deployed at run time.
type Functions struct{ c *Client }

// Functions returns the handle on the functions.
func (c *Client) Functions() *Functions { return &Functions{c: c} }

// Target says where a function runs. The zero Target runs it on every
// member. At most one of Region, Members and Groups may be set (the
// members refuse more with ErrInvalid).
type Target struct {
	// Region runs the function on the members holding the region's data
	// (onRegion); a data-aware function needs it.
	Region string
	// Filter narrows a partitioned Region's run to the leaders of the
	// groups owning these keys.
	Filter []string
	// Members runs the function on the members of these names.
	Members []string
	// Groups runs it on the members of these member groups.
	Groups []string
}

// query is t as the call's query parameters.
func (t Target) query() (url.Values, error) {
	q := url.Values{}
	if t.Region != "" {
		q.Set("onRegion", t.Region)
	}
	for name, list := range map[string][]string{"onMembers": t.Members, "onGroups": t.Groups, "filter": t.Filter} {
		for _, v := range list {
			if v == "" || strings.Contains(v, ",") {
				return nil, fmt.Errorf("%w: %s %q: names are not empty and have no comma", ErrInvalidArgument, name, v)
			}
		}
		if len(list) > 0 {
			q.Set(name, strings.Join(list, ","))
		}
	}
	return q, nil
}

// functionArgs is the body of a call: a scalar (a Go scalar or Typed) as
// {"@type","@value"}, an object argument as it is given: json.RawMessage
// or a map, which must carry "@type" and flat members (the members check
// the rest).
func functionArgs(args []any) ([]byte, error) {
	out := make([]json.RawMessage, len(args))
	for i, a := range args {
		var err error
		switch v := a.(type) {
		case json.RawMessage:
			if !json.Valid(v) || !bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
				return nil, fmt.Errorf("%w: argument %d: not a JSON object", ErrInvalidArgument, i+1)
			}
			out[i] = v
		case map[string]any:
			if _, ok := v["@type"]; !ok {
				return nil, fmt.Errorf("%w: argument %d: an object argument needs \"@type\"", ErrInvalidArgument, i+1)
			}
			if out[i], err = json.Marshal(v); err != nil {
				return nil, fmt.Errorf("%w: argument %d: %w", ErrInvalidArgument, i+1, err)
			}
		default:
			t, null, err := typedOf(a)
			if err == nil {
				out[i], err = scalarJSON(t, null)
			}
			if err != nil {
				return nil, fmt.Errorf("argument %d: %w", i+1, err)
			}
		}
	}
	return json.Marshal(out)
}

// List is the ids of every function that can be run, built-in and
// deployed (GET /kv/v1/functions).
func (f *Functions) List(ctx context.Context) ([]string, error) {
	var doc struct {
		Functions []string `json:"functions"`
	}
	if err := f.c.getJSON(ctx, "/kv/v1/functions", nil, "functions", &doc); err != nil {
		return nil, err
	}
	return doc.Functions, nil
}

// Run runs the function id where target says, with args as its arguments
// in order: Go scalars or Typed values for scalars, json.RawMessage or
// map[string]any (with "@type") for objects. It returns the executing
// members' results (in member-name order), or nil for a function that
// has none.
//
// A function may write, and nothing tells the client that running it
// twice is harmless: a call whose outcome is unknown is never sent again
// and fails with ErrOutcomeUnknown. ErrNotFound for an unknown function,
// region, member or group; a failure while it runs is an *Error with
// status 500.
func (f *Functions) Run(ctx context.Context, id string, target Target, args ...any) ([]json.RawMessage, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: no function id", ErrInvalidArgument)
	}
	q, err := target.query()
	if err != nil {
		return nil, fmt.Errorf("function %s: %w", id, err)
	}
	r := &request{method: http.MethodPost, path: "/kv/v1/functions/" + url.PathEscape(id), query: q}
	if len(args) > 0 {
		if r.body, err = functionArgs(args); err != nil {
			return nil, fmt.Errorf("function %s: %w", id, err)
		}
	}
	resp, err := f.c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(resp.body)) == 0 {
		return nil, nil // a function without results
	}
	return results(resp.body, "function's results")
}

// Function is a deployed JavaScript function: its source defines
// execute(ctx) (see the function package's documentation on the members).
type Function struct {
	// ID names the function; on deploy it goes in the path, not the
	// body.
	ID     string `json:"id,omitempty"`
	Source string `json:"source"`
	// Permission is what running it needs, e.g. DATA:READ; empty means
	// the members' default, DATA:WRITE.
	Permission string `json:"permission,omitempty"`
	// DataAware functions run where a region's data is (Target.Region).
	DataAware bool `json:"dataAware"`
	// NoResult marks a function whose return value is dropped: Run
	// answers nil. It is the API's hasResult negated, so that a
	// Function's zero value means the API's default (results kept).
	NoResult    bool   `json:"-"`
	Description string `json:"description,omitempty"`
	// Timeout, a Go duration ("2s"), stops this function sooner than the
	// members' --function-timeout; empty means that limit.
	Timeout string `json:"timeout,omitempty"`
}

// functionJSON is a Function as the API writes it, with hasResult.
type functionJSON struct {
	Function
	HasResult bool `json:"hasResult"`
}

func (j functionJSON) function() Function {
	fn := j.Function
	fn.NoResult = !j.HasResult
	return fn
}

// deployedPath is /management/v1/functions[/{id}].
func deployedPath(id string) string {
	if id == "" {
		return "/management/v1/functions"
	}
	return "/management/v1/functions/" + url.PathEscape(id)
}

// Deploy deploys fn under fn.ID, replacing a deployment of that id, and
// reports whether it is new (CLUSTER:MANAGE). A script that does not
// compile is ErrInvalid; a built-in's id is ErrConflict.
func (f *Functions) Deploy(ctx context.Context, fn Function) (created bool, err error) {
	if fn.ID == "" {
		return false, fmt.Errorf("%w: a function needs an id", ErrInvalidArgument)
	}
	spec := fn
	spec.ID = ""
	body, err := json.Marshal(functionJSON{Function: spec, HasResult: !fn.NoResult})
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	// Deploying the same function twice leaves one deployment.
	resp, err := f.c.do(ctx, &request{method: http.MethodPut, path: deployedPath(fn.ID), body: body, idempotent: true})
	if err != nil {
		return false, err
	}
	return resp.status == http.StatusCreated, nil
}

// Remove removes the deployed function id; ErrNotFound when there is
// none (a built-in cannot be removed).
func (f *Functions) Remove(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("%w: no function id", ErrInvalidArgument)
	}
	_, err := f.c.do(ctx, &request{method: http.MethodDelete, path: deployedPath(id)})
	return err
}

// Deployed is the deployed function id; ErrNotFound when there is none.
func (f *Functions) Deployed(ctx context.Context, id string) (Function, error) {
	if id == "" {
		return Function{}, fmt.Errorf("%w: no function id", ErrInvalidArgument)
	}
	var doc struct {
		Result functionJSON `json:"result"`
	}
	if err := f.c.getJSON(ctx, deployedPath(id), nil, "deployed function", &doc); err != nil {
		return Function{}, err
	}
	return doc.Result.function(), nil
}

// ListDeployed is every deployed function (not the built-ins).
func (f *Functions) ListDeployed(ctx context.Context) ([]Function, error) {
	var doc struct {
		Result []functionJSON `json:"result"`
	}
	if err := f.c.getJSON(ctx, deployedPath(""), nil, "deployed functions", &doc); err != nil {
		return nil, err
	}
	out := make([]Function, len(doc.Result))
	for i, j := range doc.Result {
		out[i] = j.function()
	}
	return out, nil
}
