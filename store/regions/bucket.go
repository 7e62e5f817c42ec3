package regions

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/region"
)

// A bucket's entries, read a page at a time from the group that owns it,
// for a move (package store/rebalance): here from this member's replica
// when it has a usable one, else over the bucket RPC (POST
// /v1/groups/{gid}/bucket: JSON bucketReq → JSON bucketPage) from a member
// that hosts the group. Reads are linearizable: a move reads the source
// once it is sealed, so every page is of the same, final content.

// bucketRPC names the bucket RPC among the store's group RPCs.
const bucketRPC = "bucket"

type bucketReq struct {
	Bucket int    `json:"bucket"`
	Region string `json:"region,omitempty"` // the page starts after this entry
	Key    string `json:"key,omitempty"`
	// Max bounds a page's keys and values in bytes (at least one entry
	// is sent, whatever its size).
	Max int `json:"max"`
}

// BucketPage is one page of a bucket's entries.
type BucketPage struct {
	Entries []BucketEntry `json:"entries"`
	// More says the bucket has entries after the last one of this page.
	More bool `json:"more,omitempty"`
}

// BucketEntry is one entry of a bucket: region, key, value and deadline
// (unix milliseconds, 0: never).
type BucketEntry struct {
	Region   string          `json:"region"`
	RegionID uint64          `json:"regionId"`
	Key      string          `json:"key"`
	Value    json.RawMessage `json:"value"`
	Expires  uint64          `json:"expires,omitempty"`
}

// BucketPage reads the entries of bucket b held by group gid after the
// entry after (the zero value: from the first), at most max bytes of keys
// and values.
func (pt *Parts) BucketPage(ctx context.Context, gid uint64, b int, after BucketEntry, max int) (BucketPage, error) {
	req := bucketReq{Bucket: b, Region: after.Region, Key: after.Key, Max: max}
	var page BucketPage
	err := pt.groups.Visit(ctx, gid, region.Linearizable, "bucket read", func(f *fsm.FSM) error {
		page = readBucket(f, req)
		return nil
	}, func(addr string) error {
		body, err := json.Marshal(req)
		if err != nil {
			return err
		}
		data, err := pt.groups.Call(ctx, addr, gid, bucketRPC, body)
		if err != nil {
			return err
		}
		page = BucketPage{}
		if err := json.Unmarshal(data, &page); err != nil {
			return fmt.Errorf("bucket read from %s: %w", addr, err)
		}
		return nil
	})
	return page, err
}

// serveBucket answers another member's bucket read of this member's
// replica.
func (pt *Parts) serveBucket(_ context.Context, replica func(region.Consistency) (*fsm.FSM, error), body []byte) ([]byte, error) {
	var req bucketReq
	if err := json.Unmarshal(body, &req); err != nil || req.Bucket < 0 || req.Bucket >= region.Buckets {
		return nil, fmt.Errorf("%w: bucket read request: %v", region.ErrInvalid, err)
	}
	f, err := replica(region.Linearizable)
	if err != nil {
		return nil, err
	}
	out, err := encodeAnswer(readBucket(f, req)) // values byte for byte
	if err != nil {
		return nil, fmt.Errorf("encode bucket page: %w", err)
	}
	return out, nil
}

// readBucket reads one page from a local state machine.
func readBucket(f *fsm.FSM, req bucketReq) BucketPage {
	var page BucketPage
	size := 0
	f.BucketEntries(req.Bucket, fsm.BucketEntry{Region: req.Region, Key: req.Key}, func(e fsm.BucketEntry) bool {
		if len(page.Entries) > 0 && size+len(e.Key)+len(e.Value) > req.Max {
			page.More = true
			return false
		}
		size += len(e.Key) + len(e.Value)
		page.Entries = append(page.Entries, BucketEntry{Region: e.Region, RegionID: e.RegionID, Key: e.Key, Value: e.Value, Expires: e.Expires})
		return true
	})
	return page
}
