package listing

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// readValue reuses its buffer, grows a large value only as its bytes
// arrive, and reports a stream that ends early.
func TestReadValue(t *testing.T) {
	buf := make([]byte, 0, 16)
	v, err := readValue(strings.NewReader("0123456789"), 10, buf)
	if err != nil || string(v) != "0123456789" || &v[0] != &buf[:1][0] {
		t.Errorf("small value: %q, %v; want it read into the given buffer", v, err)
	}
	big := strings.Repeat("v", 3<<20)
	if v, err := readValue(strings.NewReader(big), uint64(len(big)), nil); err != nil || string(v) != big {
		t.Errorf("3 MiB value: %d bytes, %v", len(v), err)
	}
	for _, n := range []uint64{10, 3 << 20, 200 << 20} {
		v, err := readValue(strings.NewReader("short"), n, nil)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("value of %d bytes from 5: err %v, want ErrUnexpectedEOF", n, err)
		}
		if n > 1<<20 && cap(v) > 1<<20 {
			t.Errorf("value of %d bytes from 5: grew to %d bytes before the data arrived", n, cap(v))
		}
	}
}

// stream writes entries as a member's scan stream; end adds the end frame.
func stream(entries []region.Entry, keysOnly, end bool) []byte {
	var b bytes.Buffer
	w := NewWriter(&b)
	var keys []string
	for _, e := range entries {
		keys = append(keys, e.Key)
	}
	w.Head(keys, true)
	for _, e := range entries {
		w.Entry(e, keysOnly)
	}
	if end {
		w.End(uint64(len(entries)))
	}
	_ = w.Flush()
	return b.Bytes()
}

func remote(t *testing.T, data []byte) Source {
	t.Helper()
	src, err := Remote(io.NopCloser(bytes.NewReader(data)), "10.0.0.2:7070", 1, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestStreamRoundTripAndMerge: what a member writes is what the reader
// reads, keys only or whole; parts merge in key order under a limit; a
// stream cut before its end frame and parts out of order fail the
// listing instead of answering short or wrong.
func TestStreamRoundTripAndMerge(t *testing.T) {
	a := []region.Entry{{Key: "a1", Value: []byte(`{"v":1}`)}, {Key: "c1", Value: []byte(`{"v":3}`)}}
	b := []region.Entry{{Key: "b1", Value: []byte(`{"v":2}`)}, {Key: "d1", Value: []byte(`{"v":4}`)}}
	ctx := context.Background()

	ls := Merge(ctx, []Source{remote(t, stream(a, false, true)), remote(t, stream(b, false, true))}, region.ListOptions{Limit: -1, PeekBytes: 64})
	if keys, all := ls.Peek(); strings.Join(keys, ",") != "a1,b1,c1,d1" || !all {
		t.Errorf("peek = %v %v", keys, all)
	}
	var got []string
	for e, ok := ls.Next(); ok; e, ok = ls.Next() {
		got = append(got, e.Key+"="+string(e.Value))
	}
	if ls.Err() != nil || strings.Join(got, " ") != `a1={"v":1} b1={"v":2} c1={"v":3} d1={"v":4}` {
		t.Errorf("merged = %v, %v", got, ls.Err())
	}
	ls.Close()

	ls = Merge(ctx, []Source{remote(t, stream(a, true, true)), remote(t, stream(b, true, true))}, region.ListOptions{Limit: 3, KeysOnly: true})
	got = got[:0]
	for e, ok := ls.Next(); ok; e, ok = ls.Next() {
		if e.Value != nil {
			t.Errorf("keys only, but %s has a value", e.Key)
		}
		got = append(got, e.Key)
	}
	if ls.Err() != nil || strings.Join(got, ",") != "a1,b1,c1" {
		t.Errorf("keys, limit 3 = %v, %v", got, ls.Err())
	}
	ls.Close()

	ls = Merge(ctx, []Source{remote(t, stream(a, false, false))}, region.ListOptions{Limit: -1})
	n := 0
	for _, ok := ls.Next(); ok; _, ok = ls.Next() {
		n++
	}
	if !errors.Is(ls.Err(), io.ErrUnexpectedEOF) {
		t.Errorf("a stream without its end frame: %d entries, err %v; want ErrUnexpectedEOF", n, ls.Err())
	}

	ls = Merge(ctx, []Source{remote(t, stream([]region.Entry{{Key: "b"}, {Key: "a"}}, true, true))}, region.ListOptions{Limit: -1, KeysOnly: true})
	for _, ok := ls.Next(); ok; _, ok = ls.Next() {
	}
	if ls.Err() == nil || !strings.Contains(ls.Err().Error(), "out of order") {
		t.Errorf("a stream out of order: err %v, want it refused", ls.Err())
	}
}
