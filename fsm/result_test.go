package fsm

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

func allSentinels() []error {
	return []error{
		region.ErrRegionNotFound, region.ErrRegionExists, region.ErrKeyNotFound, region.ErrKeyAbsent,
		region.ErrKeyExists, region.ErrCASMismatch, region.ErrNotSupported, region.ErrInvalid,
		region.ErrNotLeader, region.ErrNoLeader, region.ErrIndeterminate, region.ErrVersionConflict,
	}
}

// checkSameResult checks what callers of the store look at: the key, the
// message, the sentinels matched and the conflict details (as package
// codec's tests check its own round trips).
func checkSameResult(t *testing.T, got, want *codec.Result) {
	t.Helper()
	if got.Key != want.Key {
		t.Errorf("Key = %q, want %q", got.Key, want.Key)
	}
	if got.Version != want.Version {
		t.Errorf("Version = %d, want %d", got.Version, want.Version)
	}
	if (got.Err == nil) != (want.Err == nil) {
		t.Fatalf("Err = %v, want %v", got.Err, want.Err)
	}
	if want.Err == nil {
		return
	}
	if got.Err.Error() != want.Err.Error() {
		t.Errorf("Err message = %q, want %q", got.Err, want.Err)
	}
	for _, s := range allSentinels() {
		if g, w := errors.Is(got.Err, s), errors.Is(want.Err, s); g != w {
			t.Errorf("errors.Is(err, %q) = %v, want %v", s, g, w)
		}
	}
	var gce, wce *region.ConflictError
	if g, w := errors.As(got.Err, &gce), errors.As(want.Err, &wce); g != w {
		t.Fatalf("errors.As(err, *ConflictError) = %v, want %v", g, w)
	}
	if wce == nil {
		return
	}
	if gce.Key != wce.Key || !bytes.Equal(gce.Current, wce.Current) {
		t.Errorf("conflict = key %q current %s, want key %q current %s", gce.Key, gce.Current, wce.Key, wce.Current)
	}
	for _, s := range allSentinels() {
		if g, w := errors.Is(gce.Err, s), errors.Is(wce.Err, s); g != w {
			t.Errorf("errors.Is(conflict.Err, %q) = %v, want %v", s, g, w)
		}
	}
}

// TestResultOfEveryRefusal sends the Results of real refusals through the
// codec, as a leader does for a forwarded write.
func TestResultOfEveryRefusal(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	n.create("p", region.Partition)
	n.put("r", "a", `{"v":1}`)
	for _, c := range []codec.Command{
		{Op: codec.OpCreateRegion, Region: "r", Kind: region.Replicate},
		{Op: codec.OpDestroyRegion, Region: "nope"},
		{Op: codec.OpPutIfAbsent, Region: "r", Entries: entries("a", `{}`)},
		{Op: codec.OpReplace, Region: "r", Entries: entries("zz", `{}`)},
		{Op: codec.OpCAS, Region: "r", Pairs: []region.CASPair{{Key: "a", Old: []byte(`{"v":2}`), New: []byte(`{}`)}}},
		{Op: codec.OpDelete, Region: "r", Keys: []string{"zz"}},
		{Op: codec.OpClear, Region: "p"},
		{Op: codec.OpPut, Region: "r"},
	} {
		res := n.apply(c)
		if res.Err == nil {
			t.Fatalf("%v was not refused", c.Op)
		}
		got, err := codec.DecodeResult(codec.EncodeResult(nil, res))
		if err != nil {
			t.Fatalf("%v: DecodeResult: %v", c.Op, err)
		}
		checkSameResult(t, got, res)
	}
}
