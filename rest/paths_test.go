package rest

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/jsonout"
)

// TestPathDecoding: routing sees the escaped path and each segment is
// decoded exactly once, so every key can be addressed.
func TestPathDecoding(t *testing.T) {
	ts := newTestServer(t)
	ts.mkRegion(t, "paths", region.Replicate)
	var keys []string
	for _, tc := range []struct{ seg, key, loc string }{
		{"a%2Fb", "a/b", "a%2Fb"},
		{"100%25", "100%", "100%25"},
		{"%2525", "%25", "%2525"}, // once, not twice: not "%"
		{"%C3%BC", "ü", "%C3%BC"},
		{"x%20y", "x y", "x%20y"},
		{"a+b", "a+b", "a+b"},
		{"%41", "A", "A"},
		{"%6Beys", "keys", "%6Beys"}, // not the literal /keys segment, so an entry
		{"q%3Fx", "q?x", "q%3Fx"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			value, _ := json.Marshal(map[string]string{"k": tc.key})
			expect{status: 200}.check(t, ts, ts.do(t, "PUT", "/kv/v1/paths/"+tc.seg, ctJSON, string(value)))
			ok(string(value), map[string]string{"Content-Location": "{base}/kv/v1/paths/" + tc.loc}).
				check(t, ts, ts.do(t, "GET", "/kv/v1/paths/"+tc.seg, "", ""))
			keys = append(keys, tc.key)
		})
	}
	slices.Sort(keys)
	want, _ := jsonout.Marshal(map[string][]string{"keys": keys})
	ok(string(want), nil).check(t, ts, ts.do(t, "GET", "/kv/v1/paths/keys", "", ""))

	// %25 is the key "%", which was never written: decoding %2525 twice
	// would have stored that one.
	fails(404, "key not found").check(t, ts, ts.do(t, "GET", "/kv/v1/paths/%25", "", ""))
	// An escaped comma still separates keys: the segment is split after decoding.
	ok(`{"paths":[{"k":"a/b"},{"k":"A"}]}`, map[string]string{"Content-Location": "{base}/kv/v1/paths/a%2Fb,A"}).
		check(t, ts, ts.do(t, "GET", "/kv/v1/paths/a%2Fb%2CA", "", ""))
	// The region segment is decoded too.
	ok(`{"k":"A"}`, nil).check(t, ts, ts.do(t, "GET", "/kv/v1/p%61ths/%41", "", ""))
}

// TestBadEscape: a path that is not validly escaped never reaches a handler
// (net/http refuses it), and is a 400 either way.
func TestBadEscape(t *testing.T) {
	ts := newTestServer(t)
	ts.mkRegion(t, "r", region.Replicate, "a", va)
	for _, path := range []string{"/kv/v1/r/%zz", "/kv/v1/r/a%2", "/kv/v1/%zz/a"} {
		t.Run(path, func(t *testing.T) {
			if r := ts.doRaw(t, "GET", path); r.status != 400 {
				t.Errorf("GET %s = %d %s, want 400", path, r.status, r.body)
			}
		})
	}
}
