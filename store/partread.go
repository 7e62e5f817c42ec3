package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/region"
)

// A read of one partition group's part of a region: executed on a node
// that hosts the group, locally when that is this node, else over the read
// RPC by a member that hosts it.

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

// readPart reads group gid's part at consistency c: from this node's
// replica when it has a usable one, else from a member that hosts the
// group. Every retry looks again, since a replica opens (or moves away)
// while the cluster changes.
func (s *Store) readPart(ctx context.Context, gid uint64, c region.Consistency, req readReq) (readResp, error) {
	req.Stale = c == region.Stale
	return retryPart(ctx, s, gid, "read", func(attempt int) (readResp, error) {
		return s.readPartOnce(ctx, gid, c, req, attempt)
	})
}

// retryPart runs one read of group gid's part (a read, a query's partial,
// a listing's opening) until it succeeds or fails for good: errors a read
// may retry (retryableRead) are tried again after pause, against whichever
// replica once(attempt) picks, until LeaderWait or ctx ends. what names the
// operation in the final error.
func retryPart[T any](ctx context.Context, s *Store, gid uint64, what string, once func(attempt int) (T, error)) (T, error) {
	var last error
	var since time.Time
	for attempt := 0; ; attempt++ {
		v, err := once(attempt)
		if err == nil {
			return v, nil
		}
		if !retryableRead(err) {
			return v, err
		}
		last = err
		if since.IsZero() {
			since = time.Now()
		}
		if err := s.pause(ctx, s.localFor(gid), attempt, since, last); err != nil {
			var zero T
			return zero, fmt.Errorf("%s group %d: %w", what, gid, err)
		}
	}
}

func (s *Store) readPartOnce(ctx context.Context, gid uint64, c region.Consistency, req readReq, attempt int) (readResp, error) {
	if g := s.localFor(gid); g != nil {
		err := s.localRead(ctx, g, c, catchUpWait)
		if err == nil {
			return execRead(g.FSM(), req)
		}
		if !errors.Is(err, errLagging) {
			return readResp{}, err
		}
		// Behind: another member answers.
	}
	addr, err := s.hostFor(gid, attempt)
	if err != nil {
		return readResp{}, err
	}
	return s.client.read(ctx, addr, gid, req)
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
