package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Index is a secondary index of a region, defined as Geode defines one:
// a name, the expression indexed and the FROM clause it is evaluated
// over, e.g. {Name: "byCustomer", Expression: "o.customerId", From:
// "/orders o"}; queries comparing that expression use it. Region and Path
// are the members' reading of it (the region, the member path indexed),
// not sent.
type Index struct {
	Name       string   `json:"name"`
	Expression string   `json:"expression"`
	From       string   `json:"from"`
	Region     string   `json:"region,omitempty"`
	Path       []string `json:"path,omitempty"`
}

// Indexes is the handle on one region's indexes (the management API:
// CLUSTER:MANAGE).
type Indexes struct {
	c      *Client
	region string
}

// Indexes returns the handle on the indexes of region. It does not check
// that the region exists: its operations answer ErrNotFound if not.
func (c *Client) Indexes(region string) *Indexes { return &Indexes{c: c, region: region} }

// path is /management/v1/regions/{region}/indexes[/{name}].
func (x *Indexes) path(name string) string {
	return strings.TrimSuffix(regionsPath(x.region)+"/indexes/"+url.PathEscape(name), "/")
}

// List is the region's indexes.
func (x *Indexes) List(ctx context.Context) ([]Index, error) {
	var doc struct {
		Result []Index `json:"result"`
	}
	err := x.c.getJSON(ctx, x.path(""), nil, "indexes", &doc)
	return doc.Result, err
}

// Get is the index called name; ErrNotFound when there is none.
func (x *Indexes) Get(ctx context.Context, name string) (Index, error) {
	var doc struct {
		Result Index `json:"result"`
	}
	if err := named("index name", name); err != nil {
		return Index{}, err
	}
	err := x.c.getJSON(ctx, x.path(name), nil, "index", &doc)
	return doc.Result, err
}

// Create defines idx, built by the members in the background. An existing
// name is ErrConflict (the definition in the *Error's Current); a
// definition the members cannot read, ErrInvalid.
func (x *Indexes) Create(ctx context.Context, idx Index) error {
	idx.Region, idx.Path = "", nil
	body, err := json.Marshal(idx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	_, err = x.c.do(ctx, &request{method: http.MethodPost, path: x.path(""), body: body})
	return err
}

// Delete removes the index called name; ErrNotFound when there is none.
func (x *Indexes) Delete(ctx context.Context, name string) error {
	_, err := call(ctx, x.c, "index name", name, &request{method: http.MethodDelete, path: x.path(name)})
	return err
}
