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

// Functions is the handle on server-side functions, built-in or deployed.
type Functions struct{ c *Client }

// Functions returns the handle on the functions.
func (c *Client) Functions() *Functions { return &Functions{c: c} }

// Target says where a function runs: the zero Target is every member.
// Region (onRegion) runs it on the members holding the region's data, as
// a data-aware function needs, and Filter narrows a partitioned region's
// run to the leaders of the groups owning those keys; Members and Groups
// (member groups) name the members. At most one of Region, Members and
// Groups may be set (the members refuse more with ErrInvalid).
type Target struct {
	Region                  string
	Filter, Members, Groups []string
}

// List is the ids of every function that can be run, built-in and
// deployed (GET /kv/v1/functions).
func (f *Functions) List(ctx context.Context) ([]string, error) {
	var doc struct {
		Functions []string `json:"functions"`
	}
	err := f.c.getJSON(ctx, "/kv/v1/functions", nil, "functions", &doc)
	return doc.Functions, err
}

// Run runs the function id where target says, with args as its arguments
// in order: Go scalars or Typed values for scalars; for an object, a
// json.RawMessage or a value encoding to a JSON object with "@type" and
// flat members (a map, a struct). It returns the executing members'
// results in member-name order, or nil for a function that has none.
// ErrNotFound for an unknown function, region, member or group; a
// failure while it runs is an *Error with status 500.
//
// A function may write, and nothing tells the client that running it
// twice is harmless: a call whose outcome is unknown is never sent again
// and fails with ErrOutcomeUnknown.
func (f *Functions) Run(ctx context.Context, id string, target Target, args ...any) ([]json.RawMessage, error) {
	q := url.Values{}
	if target.Region != "" {
		q.Set("onRegion", target.Region)
	}
	for name, list := range map[string][]string{"onMembers": target.Members, "onGroups": target.Groups, "filter": target.Filter} {
		for _, v := range list {
			if v == "" || strings.Contains(v, ",") {
				return nil, fmt.Errorf("function %s: %w: %s %q: names are not empty and have no comma", id, ErrInvalidArgument, name, v)
			}
		}
		if len(list) > 0 {
			q.Set(name, strings.Join(list, ","))
		}
	}
	r := &request{method: http.MethodPost, path: "/kv/v1/functions/" + url.PathEscape(id), query: q}
	if len(args) > 0 {
		body := make([]json.RawMessage, len(args))
		for i, a := range args {
			var err error
			if body[i], err = scalarJSON(a); err != nil {
				body[i], err = objectArg(a) // not a scalar: an object
			}
			if err != nil {
				return nil, fmt.Errorf("function %s: argument %d: %w", id, i+1, err)
			}
		}
		r.body, _ = json.Marshal(body) // raw JSON values: it cannot fail
	}
	resp, err := call(ctx, f.c, "function id", id, r)
	if err != nil || len(bytes.TrimSpace(resp.body)) == 0 {
		return nil, err // an error, or a function without results
	}
	return results(resp.body, "function's results")
}

// objectArg is an object argument, JSON with "@type" (members checked by
// the members).
func objectArg(v any) (json.RawMessage, error) {
	data, err := encode(v)
	var obj map[string]json.RawMessage
	if err == nil && (json.Unmarshal(data, &obj) != nil || obj["@type"] == nil) {
		err = fmt.Errorf("%w: neither a scalar nor a JSON object with \"@type\"", ErrInvalidArgument)
	}
	return data, err
}

// Function is a deployed JavaScript function, whose Source defines
// execute(ctx). Permission is what running it needs (empty: the members'
// default, DATA:WRITE); a DataAware one runs where a region's data is
// (Target.Region); Timeout, a Go duration ("2s"), stops it sooner than the
// members' --function-timeout. NoResult drops its return value (Run
// answers nil): it is the API's hasResult negated, so that the zero value
// means the API's default.
type Function struct {
	ID          string `json:"id,omitempty"` // on deploy, in the path only
	Source      string `json:"source"`
	Permission  string `json:"permission,omitempty"`
	DataAware   bool   `json:"dataAware"`
	NoResult    bool   `json:"-"`
	Description string `json:"description,omitempty"`
	Timeout     string `json:"timeout,omitempty"`
}

// functionJSON is a Function in the API's terms.
type functionJSON struct {
	Function
	HasResult bool `json:"hasResult"`
}

func (j functionJSON) function() Function {
	j.Function.NoResult = !j.HasResult
	return j.Function
}

// deployedPath is /management/v1/functions[/{id}].
func deployedPath(id string) string {
	return strings.TrimSuffix("/management/v1/functions/"+url.PathEscape(id), "/")
}

// Deploy deploys fn under fn.ID, replacing a deployment of that id, and
// reports whether it is new. A script that does not compile is
// ErrInvalid; a built-in's id is ErrConflict. Deploying twice leaves one
// deployment, so it is sent again while it may.
func (f *Functions) Deploy(ctx context.Context, fn Function) (created bool, err error) {
	spec := functionJSON{Function: fn, HasResult: !fn.NoResult}
	spec.ID = ""
	body, err := json.Marshal(spec)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	resp, err := call(ctx, f.c, "function id", fn.ID, &request{method: http.MethodPut, path: deployedPath(fn.ID), body: body, idempotent: true})
	return err == nil && resp.status == http.StatusCreated, err
}

// Remove removes the deployed function id; ErrNotFound when there is none
// (a built-in cannot be removed).
func (f *Functions) Remove(ctx context.Context, id string) error {
	_, err := call(ctx, f.c, "function id", id, &request{method: http.MethodDelete, path: deployedPath(id)})
	return err
}

// Deployed is the deployed function id; ErrNotFound when there is none.
func (f *Functions) Deployed(ctx context.Context, id string) (Function, error) {
	if err := named("function id", id); err != nil {
		return Function{}, err
	}
	var doc struct {
		Result functionJSON `json:"result"`
	}
	err := f.c.getJSON(ctx, deployedPath(id), nil, "deployed function", &doc)
	return doc.Result.function(), err
}

// ListDeployed is every deployed function (no built-in).
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
