package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// Region kinds.
const (
	Replicate = "REPLICATE" // every member holds every entry
	Partition = "PARTITION" // entries hashed into partition groups
)

// RegionInfo describes a region (the management API's region).
type RegionInfo struct {
	Name string `json:"name"`
	// Type is Replicate or Partition.
	Type string `json:"type"`
	// EntryTimeToLive is the default time to live of an entry written
	// without WithTTL, in seconds; 0 means never.
	EntryTimeToLive int64 `json:"entryTimeToLive,omitempty"`
}

// regionsPath is /management/v1/regions[/{name}].
func regionsPath(name string) string {
	if name == "" {
		return "/management/v1/regions"
	}
	return "/management/v1/regions/" + url.PathEscape(name)
}

// Regions lists the regions, sorted by name (GET /kv/v1: DATA:READ).
func (c *Client) Regions(ctx context.Context) ([]RegionInfo, error) {
	var doc struct {
		Regions []RegionInfo `json:"regions"`
	}
	if err := c.getJSON(ctx, "/kv/v1", nil, "regions", &doc); err != nil {
		return nil, err
	}
	return doc.Regions, nil
}

// RegionInfo describes one region (the management API: CLUSTER:MANAGE); ErrNotFound when there is none of
// that name.
func (c *Client) RegionInfo(ctx context.Context, name string) (RegionInfo, error) {
	var doc struct {
		Result RegionInfo `json:"result"`
	}
	err := c.getJSON(ctx, regionsPath(name), nil, "region", &doc)
	return doc.Result, err
}

// CreateRegion creates a region; ErrConflict when one of that name exists.
func (c *Client) CreateRegion(ctx context.Context, info RegionInfo) error {
	body, err := json.Marshal(info)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, &request{method: http.MethodPost, path: regionsPath(""), body: body})
	return err
}

// AlterRegion sets a region's default entry time to live, in seconds (0:
// never), for the writes after the change.
func (c *Client) AlterRegion(ctx context.Context, name string, entryTimeToLive int64) (RegionInfo, error) {
	body, err := json.Marshal(map[string]int64{"entryTimeToLive": entryTimeToLive})
	if err != nil {
		return RegionInfo{}, err
	}
	resp, err := c.do(ctx, &request{method: http.MethodPatch, path: regionsPath(name), body: body, idempotent: true})
	if err != nil {
		return RegionInfo{}, err
	}
	var doc struct {
		Result RegionInfo `json:"result"`
	}
	if err := json.Unmarshal(resp.body, &doc); err != nil {
		return RegionInfo{}, &decodeError{what: "region", err: err}
	}
	return doc.Result, nil
}

// DestroyRegion removes a region and all its entries; ErrNotFound when
// there is none of that name.
func (c *Client) DestroyRegion(ctx context.Context, name string) error {
	_, err := c.do(ctx, &request{method: http.MethodDelete, path: regionsPath(name)})
	return err
}

// getJSON GETs path and decodes the answer into doc.
func (c *Client) getJSON(ctx context.Context, path string, q url.Values, what string, doc any) error {
	resp, err := c.do(ctx, &request{method: http.MethodGet, path: path, query: q, idempotent: true})
	if err != nil {
		return err
	}
	if err := json.Unmarshal(resp.body, doc); err != nil {
		return &decodeError{what: what, err: err}
	}
	return nil
}
