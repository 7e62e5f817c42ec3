package codectest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// Sentinels are the region errors a Result's error may wrap, which must
// keep their identity through the codec.
func Sentinels() []error {
	return []error{
		region.ErrRegionNotFound, region.ErrRegionExists, region.ErrKeyNotFound, region.ErrKeyAbsent,
		region.ErrKeyExists, region.ErrCASMismatch, region.ErrNotSupported, region.ErrInvalid,
		region.ErrNotLeader, region.ErrNoLeader, region.ErrIndeterminate, region.ErrVersionConflict,
	}
}

// CheckSameResult checks what callers of the store look at: the key, the
// version, the message, the sentinels matched and the conflict details.
func CheckSameResult(t testing.TB, got, want *codec.Result) {
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
	for _, s := range Sentinels() {
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
	for _, s := range Sentinels() {
		if g, w := errors.Is(gce.Err, s), errors.Is(wce.Err, s); g != w {
			t.Errorf("errors.Is(conflict.Err, %q) = %v, want %v", s, g, w)
		}
	}
}
