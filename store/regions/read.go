package regions

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/region"
)

// A read of one partition group's part of a region: executed on a member
// that hosts the group, locally when that is this member, else over the
// read RPC (POST /v1/groups/{gid}/read: JSON readReq → JSON readResp) by
// a member that hosts it.

// readRPC names the read RPC among the store's group RPCs.
const readRPC = "read"

const (
	readGet   = "get"
	readList  = "list"
	readKeys  = "keys"
	readCount = "count"
)

type readReq struct {
	Op     string   `json:"op"`
	Region string   `json:"region"`
	ID     uint64   `json:"id"`
	Keys   []string `json:"keys,omitempty"`
	Limit  int      `json:"limit,omitempty"`
	Stale  bool     `json:"stale,omitempty"`
}

type readResp struct {
	// Values: get (aligned with the keys; null for a missing key) and list.
	Values []json.RawMessage `json:"values,omitempty"`
	// Keys: list and keys.
	Keys  []string `json:"keys,omitempty"`
	Count int      `json:"count,omitempty"`
}

// readPart reads group gid's part at consistency c: from this member's
// replica when it has a usable one, else from a member that hosts the
// group. Every retry looks again, since a replica opens (or moves away)
// while the cluster changes.
func (pt *Parts) readPart(ctx context.Context, gid uint64, c region.Consistency, req readReq) (readResp, error) {
	req.Stale = c == region.Stale
	var resp readResp
	err := pt.groups.Visit(ctx, gid, c, "read", func(f *fsm.FSM) error {
		var err error
		resp, err = execRead(f, req)
		return err
	}, func(addr string) error {
		body, err := json.Marshal(req)
		if err != nil {
			return err
		}
		data, err := pt.groups.Call(ctx, addr, gid, readRPC, body)
		if err != nil {
			return err
		}
		resp = readResp{}
		if err := json.Unmarshal(data, &resp); err != nil {
			return fmt.Errorf("read from %s: %w", addr, err)
		}
		nullToNil(resp.Values)
		return nil
	})
	if err != nil {
		return readResp{}, err
	}
	return resp, nil
}

// serveRead answers another member's read of this member's replica.
func (pt *Parts) serveRead(_ context.Context, replica func(region.Consistency) (*fsm.FSM, error), body []byte) ([]byte, error) {
	var rr readReq
	if err := json.Unmarshal(body, &rr); err != nil {
		return nil, fmt.Errorf("%w: read request: %v", region.ErrInvalid, err)
	}
	c := region.Linearizable
	if rr.Stale {
		c = region.Stale
	}
	f, err := replica(c)
	if err != nil {
		return nil, err
	}
	resp, err := execRead(f, rr)
	if err != nil {
		return nil, err
	}
	out, err := encodeAnswer(resp) // stored values byte for byte: no HTML escaping
	if err != nil {
		return nil, fmt.Errorf("encode read answer: %w", err)
	}
	return out, nil
}

// execRead runs req against a local state machine.
func execRead(f *fsm.FSM, req readReq) (readResp, error) {
	switch req.Op {
	case readGet:
		vals, err := f.GetMany(req.Region, req.ID, req.Keys)
		return readResp{Values: vals}, err
	case readList:
		entries, err := f.List(req.Region, req.ID, req.Limit)
		if err != nil {
			return readResp{}, err
		}
		resp := readResp{Keys: make([]string, len(entries)), Values: make([]json.RawMessage, len(entries))}
		for i, e := range entries {
			resp.Keys[i], resp.Values[i] = e.Key, e.Value
		}
		return resp, nil
	case readKeys:
		keys, err := f.Keys(req.Region, req.ID)
		return readResp{Keys: keys}, err
	case readCount:
		n, err := f.Count(req.Region, req.ID)
		return readResp{Count: n}, err
	}
	return readResp{}, fmt.Errorf("%w: unknown read %q", region.ErrInvalid, req.Op)
}

// nullToNil turns JSON nulls (a missing key in a get, after the RPC's JSON
// round trip) back into nil values: stored values are objects, never null.
func nullToNil(vals []json.RawMessage) {
	for i, v := range vals {
		if string(v) == "null" {
			vals[i] = nil
		}
	}
}
