package codec_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/codec/codectest"
	"github.com/kvnode/kvnode/region"
)

func TestResultRoundTrip(t *testing.T) {
	type tc struct {
		name string
		in   codec.Result
	}
	cases := []tc{
		{"success", codec.Result{}},
		{"success with key", codec.Result{Key: "42"}},
		{"unicode key", codec.Result{Key: "ключ/🙂"}},
		{"meta version", codec.Result{Version: 1 << 40}},
		{"version conflict", codec.Result{Version: 9, Err: fmt.Errorf("metadata %q: %w", "t", region.ErrVersionConflict)}},
		{"error without sentinel", codec.Result{Err: errors.New("disk on fire")}},
		{"key exists conflict", codec.Result{Key: "a", Err: &region.ConflictError{Err: region.ErrKeyExists, Key: "a", Current: []byte(`{"n":1}`)}}},
		{"CAS conflict", codec.Result{Err: &region.ConflictError{Err: region.ErrCASMismatch, Key: "é", Current: []byte(`{}`)}}},
		{"wrapped conflict", codec.Result{Err: fmt.Errorf("put-if-absent on %q: %w", "orders",
			&region.ConflictError{Err: region.ErrKeyExists, Key: "k", Current: []byte(`{"x":[1]}`)})}},
		{"conflict without sentinel", codec.Result{Err: &region.ConflictError{Err: errors.New("odd"), Key: "k", Current: []byte(`{}`)}}},
	}
	for _, s := range codectest.Sentinels() {
		cases = append(cases,
			tc{"bare " + s.Error(), codec.Result{Err: s}},
			tc{"wrapped " + s.Error(), codec.Result{Err: fmt.Errorf("region %q: key %q: %w", "orders", "k", s)}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := codec.DecodeResult(codec.EncodeResult(nil, &c.in))
			if err != nil {
				t.Fatalf("DecodeResult: %v", err)
			}
			codectest.CheckSameResult(t, got, &c.in)
		})
	}
}

func TestEncodeResultNil(t *testing.T) {
	got, err := codec.DecodeResult(codec.EncodeResult(nil, nil))
	if err != nil || got.Key != "" || got.Err != nil {
		t.Errorf("round trip of a nil Result = %+v, %v; want an empty Result", got, err)
	}
}

func TestDecodeResultRejects(t *testing.T) {
	valid := codec.EncodeResult(nil, &codec.Result{Key: "k", Err: &region.ConflictError{Err: region.ErrKeyExists, Key: "k", Current: []byte(`{}`)}})
	for n := 0; n < len(valid); n++ {
		if _, err := codec.DecodeResult(valid[:n]); err == nil {
			t.Errorf("DecodeResult of the first %d of %d bytes succeeded, want an error", n, len(valid))
		}
	}
	for _, in := range [][]byte{
		append(append([]byte(nil), valid...), 0), // trailing
		{2, 0, 0},                                // version
		{1, 0, 2},                                // error flag
		{1, 0, 1, 1, 0, 2},                       // conflict flag
	} {
		if r, err := codec.DecodeResult(in); err == nil {
			t.Errorf("codec.DecodeResult(%x) = %+v, nil; want an error", in, r)
		}
	}
}

// TestDecodeResultUnknownCode: an error code from a newer peer keeps its
// message.
func TestDecodeResultUnknownCode(t *testing.T) {
	in := []byte{1, 0, 1, 200, 4, 'o', 'o', 'p', 's', 0}
	r, err := codec.DecodeResult(in)
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
	r, err := codec.DecodeResult([]byte{1, 2, 'k', '7', 0})
	if err != nil || r.Key != "k7" || r.Err != nil || r.Version != 0 {
		t.Fatalf("codec.DecodeResult(v1) = %+v, %v; want key k7, no error", r, err)
	}
}
