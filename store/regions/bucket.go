package regions

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/region"
)

// A bucket's entries, read a page at a time from the group that owns it,
// for a move (package store/rebalance): here from this member's replica
// when it has a usable one, else over the bucket RPC (POST
// /v1/groups/{gid}/bucket: JSON bucketReq → JSON BucketPage or
// BucketDelta) from a member that hosts the group. Reads are
// linearizable. A move copies the pages while the source still takes
// writes, then seals the bucket and reads what changed since the first
// page (BucketDelta, from the source's change history), so that writes of
// the bucket pause only for that last, small pass.

// bucketRPC names the bucket RPC among the store's group RPCs.
const bucketRPC = "bucket"

type bucketReq struct {
	Bucket int    `json:"bucket"`
	Region string `json:"region,omitempty"` // the page starts after this entry
	Key    string `json:"key,omitempty"`
	// Max bounds a page's keys and values in bytes (at least one entry
	// is sent, whatever its size).
	Max int `json:"max"`
	// Since asks for a BucketDelta instead of a page: what changed after
	// this position of the group's history.
	Since *history.Pos `json:"since,omitempty"`
}

// BucketPage is one page of a bucket's entries.
type BucketPage struct {
	Entries []BucketEntry `json:"entries"`
	// More says the bucket has entries after the last one of this page.
	More bool `json:"more,omitempty"`
	// Pos is the replica's position in its history when the page was
	// read: every change after it is in a BucketDelta since it.
	Pos history.Pos `json:"pos"`
}

// BucketDelta is what changed in a bucket after a position: the current
// entries of the keys written since, and the keys removed since (Region,
// RegionID and Key only).
type BucketDelta struct {
	Entries []BucketEntry `json:"entries,omitempty"`
	Removed []BucketEntry `json:"removed,omitempty"`
	// Whole says the changes cannot be told, and the bucket must be
	// copied again: the history no longer reaches back, a region was
	// cleared, or more than maxDeltaBytes changed.
	Whole bool `json:"whole,omitempty"`
	// Delta is set by every build that reads deltas: an answer without it
	// is a page from an older member, and counts as Whole.
	Delta bool `json:"delta"`
	// Pos is the position up to which the history was read: every change
	// after it is in a BucketDelta since it (zero from a build before
	// issue 29's per-page deltas).
	Pos history.Pos `json:"pos,omitzero"`
}

// maxDeltaBytes bounds a BucketDelta's keys and values: a bucket that
// changed more while its pages were copied is copied again, sealed.
const maxDeltaBytes = 8 << 20

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
	var page BucketPage
	err := pt.bucketCall(ctx, gid, bucketReq{Bucket: b, Region: after.Region, Key: after.Key, Max: max}, &page)
	return page, err
}

// BucketDelta reads what changed in bucket b of group gid after position
// since (a page's Pos).
func (pt *Parts) BucketDelta(ctx context.Context, gid uint64, b int, since history.Pos) (BucketDelta, error) {
	var delta BucketDelta
	err := pt.bucketCall(ctx, gid, bucketReq{Bucket: b, Since: &since}, &delta)
	return delta, err
}

// bucketCall answers req into out (a *BucketPage or *BucketDelta) from a
// replica of group gid, here or on a member.
func (pt *Parts) bucketCall(ctx context.Context, gid uint64, req bucketReq, out any) error {
	return pt.groups.Visit(ctx, gid, region.Linearizable, "bucket read", func(f *fsm.FSM) error {
		return bucketAnswer(f, req, out)
	}, func(addr string) error {
		body, err := json.Marshal(req)
		if err != nil {
			return err
		}
		data, err := pt.groups.Call(ctx, addr, gid, bucketRPC, body)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("bucket read from %s: %w", addr, err)
		}
		return nil
	})
}

// bucketAnswer reads req's page or delta from a local state machine into
// out.
func bucketAnswer(f *fsm.FSM, req bucketReq, out any) error {
	switch out := out.(type) {
	case *BucketPage:
		*out = readBucket(f, req)
	case *BucketDelta:
		*out = readDelta(f, req.Bucket, *req.Since)
	default:
		return fmt.Errorf("bucket read into %T", out)
	}
	return nil
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
	var answer any = &BucketPage{}
	if req.Since != nil {
		answer = &BucketDelta{}
	}
	if err := bucketAnswer(f, req, answer); err != nil {
		return nil, err
	}
	out, err := encodeAnswer(answer) // values byte for byte
	if err != nil {
		return nil, fmt.Errorf("encode bucket page: %w", err)
	}
	return out, nil
}

// readBucket reads one page from a local state machine.
func readBucket(f *fsm.FSM, req bucketReq) BucketPage {
	page := BucketPage{Pos: f.History().Position()}
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

// readDelta reads from a local state machine what changed in bucket b
// after position since: the keys its history names, then their entries
// now.
func readDelta(f *fsm.FSM, b int, since history.Pos) BucketDelta {
	type key struct {
		region string
		id     uint64
		key    string
	}
	var keys []key
	seen := map[key]bool{}
	size, whole := 0, false
	// Taken before the history is read, so that the events after it are
	// read here or by the next delta since it: none falls between.
	pos := f.History().Position()
	err := f.History().Since(since, func(e history.Event) bool {
		switch {
		case e.Type == region.EventClear:
			whole = true
		case e.Type == history.Fence || e.Key == "" || region.Bucket(e.Key) != b:
		case !seen[key{e.Region, e.RegionID, e.Key}]:
			k := key{e.Region, e.RegionID, e.Key}
			seen[k] = true
			keys = append(keys, k)
			size += len(e.Key) + len(e.Value)
			whole = size > maxDeltaBytes
		}
		return !whole
	})
	if err != nil || whole {
		return BucketDelta{Whole: true, Delta: true}
	}
	d := BucketDelta{Delta: true, Pos: pos}
	for _, k := range keys {
		if e, ok := f.BucketEntryOf(k.region, k.id, k.key); ok {
			d.Entries = append(d.Entries, BucketEntry{Region: e.Region, RegionID: e.RegionID, Key: e.Key, Value: e.Value, Expires: e.Expires})
		} else {
			d.Removed = append(d.Removed, BucketEntry{Region: k.region, RegionID: k.id, Key: k.key})
		}
	}
	return d
}
