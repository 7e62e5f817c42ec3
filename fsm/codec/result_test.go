package codec

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/kvnode/kvnode/region"
)

func allSentinels() []error {
	return []error{
		region.ErrRegionNotFound, region.ErrRegionExists, region.ErrKeyNotFound, region.ErrKeyAbsent,
		region.ErrKeyExists, region.ErrCASMismatch, region.ErrNotSupported, region.ErrInvalid,
		region.ErrNotLeader, region.ErrNoLeader, region.ErrIndeterminate, region.ErrVersionConflict,
	}
}

func TestResultRoundTrip(t *testing.T) {
	type tc struct {
		name string
		in   Result
	}
	cases := []tc{
		{"success", Result{}},
		{"success with key", Result{Key: "42"}},
		{"unicode key", Result{Key: "ключ/🙂"}},
		{"meta version", Result{Version: 1 << 40}},
		{"version conflict", Result{Version: 9, Err: fmt.Errorf("metadata %q: %w", "t", region.ErrVersionConflict)}},
		{"error without sentinel", Result{Err: errors.New("disk on fire")}},
		{"key exists conflict", Result{Key: "a", Err: &region.ConflictError{Err: region.ErrKeyExists, Key: "a", Current: []byte(`{"n":1}`)}}},
		{"CAS conflict", Result{Err: &region.ConflictError{Err: region.ErrCASMismatch, Key: "é", Current: []byte(`{}`)}}},
		{"wrapped conflict", Result{Err: fmt.Errorf("put-if-absent on %q: %w", "orders",
			&region.ConflictError{Err: region.ErrKeyExists, Key: "k", Current: []byte(`{"x":[1]}`)})}},
		{"conflict without sentinel", Result{Err: &region.ConflictError{Err: errors.New("odd"), Key: "k", Current: []byte(`{}`)}}},
	}
	for _, s := range allSentinels() {
		cases = append(cases,
			tc{"bare " + s.Error(), Result{Err: s}},
			tc{"wrapped " + s.Error(), Result{Err: fmt.Errorf("region %q: key %q: %w", "orders", "k", s)}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeResult(EncodeResult(nil, &c.in))
			if err != nil {
				t.Fatalf("DecodeResult: %v", err)
			}
			checkSameResult(t, got, &c.in)
		})
	}
}

// checkSameResult checks what callers of the store look at: the key, the
// message, the sentinels matched and the conflict details.
func checkSameResult(t *testing.T, got, want *Result) {
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

func TestEncodeResultNil(t *testing.T) {
	got, err := DecodeResult(EncodeResult(nil, nil))
	if err != nil || got.Key != "" || got.Err != nil {
		t.Errorf("round trip of a nil Result = %+v, %v; want an empty Result", got, err)
	}
}

func TestDecodeResultRejects(t *testing.T) {
	valid := EncodeResult(nil, &Result{Key: "k", Err: &region.ConflictError{Err: region.ErrKeyExists, Key: "k", Current: []byte(`{}`)}})
	for n := 0; n < len(valid); n++ {
		if _, err := DecodeResult(valid[:n]); err == nil {
			t.Errorf("DecodeResult of the first %d of %d bytes succeeded, want an error", n, len(valid))
		}
	}
	for _, in := range [][]byte{
		append(append([]byte(nil), valid...), 0), // trailing
		{2, 0, 0},                                // version
		{1, 0, 2},                                // error flag
		{1, 0, 1, 1, 0, 2},                       // conflict flag
	} {
		if r, err := DecodeResult(in); err == nil {
			t.Errorf("DecodeResult(%x) = %+v, nil; want an error", in, r)
		}
	}
}

// TestDecodeResultUnknownCode: an error code from a newer peer keeps its
// message.
func TestDecodeResultUnknownCode(t *testing.T) {
	in := []byte{1, 0, 1, 200, 4, 'o', 'o', 'p', 's', 0}
	r, err := DecodeResult(in)
	if err != nil {
		t.Fatalf("DecodeResult: %v", err)
	}
	if r.Err == nil || r.Err.Error() != "oops" {
		t.Errorf("Err = %v, want an error reading %q", r.Err, "oops")
	}
}

// TestDecodeResultVersion1: a result from a peer still on format 1 (no
// version field) decodes.
func TestDecodeResultVersion1(t *testing.T) {
	r, err := DecodeResult([]byte{1, 2, 'k', '7', 0})
	if err != nil || r.Key != "k7" || r.Err != nil || r.Version != 0 {
		t.Fatalf("DecodeResult(v1) = %+v, %v; want key k7, no error", r, err)
	}
}
