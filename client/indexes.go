package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// Index is a secondary index of a region, defined as Geode defines one:
// a name, the expression indexed and the FROM clause it is evaluated
// over, e.g. {Name: "byCustomer", Expression: "o.customerId", From:
// "/orders o"}. Queries whose WHERE clause compares that expression use
// it.
type Index struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
	From       string `json:"from"`
	// Region and Path are the members' reading of the definition: the
	// region it is on and the member path it indexes (not sent).
	Region string   `json:"region,omitempty"`
	Path   []string `json:"path,omitempty"`
}

// Indexes is the handle on one region's indexes (the management API:
// CLUSTER:MANAGE).
type Indexes struct {
	c      *Client
	region string
}

// Indexes returns the handle on the indexes of the region called region.
// It does not check that the region exists: its operations answer
// ErrNotFound if not.
func (c *Client) Indexes(region string) *Indexes { return &Indexes{c: c, region: region} }

// path is /management/v1/regions/{region}/indexes[/{name}].
func (x *Indexes) path(name string) string {
	p := regionsPath(x.region) + "/indexes"
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	return p
}

// List is the region's indexes.
func (x *Indexes) List(ctx context.Context) ([]Index, error) {
	var doc struct {
		Result []Index `json:"result"`
	}
	if err := x.c.getJSON(ctx, x.path(""), nil, "indexes", &doc); err != nil {
		return nil, err
	}
	return doc.Result, nil
}

// Get is the index called name; ErrNotFound when there is none.
func (x *Indexes) Get(ctx context.Context, name string) (Index, error) {
	if name == "" {
		return Index{}, fmt.Errorf("%w: no index name", ErrInvalidArgument)
	}
	var doc struct {
		Result Index `json:"result"`
	}
	err := x.c.getJSON(ctx, x.path(name), nil, "index", &doc)
	return doc.Result, err
}

// Create defines idx on the region; the members build it in the
// background. An existing name is ErrConflict, with the existing
// definition as the *Error's Current; a definition the members cannot
// read is ErrInvalid.
func (x *Indexes) Create(ctx context.Context, idx Index) error {
	body, err := json.Marshal(struct {
		Name       string `json:"name"`
		Expression string `json:"expression"`
		From       string `json:"from"`
	}{idx.Name, idx.Expression, idx.From})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	_, err = x.c.do(ctx, &request{method: http.MethodPost, path: x.path(""), body: body})
	return err
}

// Delete removes the index called name; ErrNotFound when there is none.
func (x *Indexes) Delete(ctx context.Context, name string) error {
	if name == "" {
		return fmt.Errorf("%w: no index name", ErrInvalidArgument)
	}
	_, err := x.c.do(ctx, &request{method: http.MethodDelete, path: x.path(name)})
	return err
}
