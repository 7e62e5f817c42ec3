package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/jsonout"
)

// GET /{region}/keys carries Geode's Location: <base>/kv/v1/{region}/keys.
func TestListKeysLocation(t *testing.T) {
	loc := map[string]string{"Location": "{base}/kv/v1/{r}/keys"}
	runCases(t, []apiCase{
		{name: "keys", seed: []string{"b", vb, "a/c", va}, method: "GET", path: "/kv/v1/{r}/keys",
			want: ok(`{"keys":["a/c","b"]}`, loc)},
		{name: "empty", method: "GET", path: "/kv/v1/{r}/keys", want: ok(`{"keys":[]}`, loc)},
		{name: "stale", seed: ab(), method: "GET", path: "/kv/v1/{r}/keys?consistency=stale", want: ok(`{"keys":["a","b"]}`, loc)},
		{name: "unknown region", noRegion: true, method: "GET", path: "/kv/v1/{r}/keys",
			want: expect{status: 404, cause: "region not found", header: map[string]string{"Location": ""}}},
	})
}

// Keys go out as JSON strings exactly as encoding/json writes them without
// HTML escaping, whether they take the plain path or not.
func TestListKeysEncoding(t *testing.T) {
	keys := []string{"plain", "a<b>&c", `quo"te`, `back\slash`, "tab\tin", "é ü 日本", "\u2028line", "~!@#$%^*()"}
	var kv []string
	for _, k := range keys {
		kv = append(kv, k, va)
	}
	ts := newTestServer(t)
	// Keys with control characters are refused by the API but may be
	// stored by the store directly, as old versions did.
	ts.mkRegion(t, "enc", region.Replicate, kv...)
	r := ts.do(t, "GET", "/kv/v1/enc/keys", "", "")
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	want, err := jsonout.Marshal(struct {
		Keys []string `json:"keys"`
	}{sorted})
	if err != nil {
		t.Fatal(err)
	}
	ok(string(want), nil).check(t, ts, r)
}

// Content-Location names the listed keys while that URL is one this server
// accepts (a path of at most MaxURLBytes); beyond, it is left out rather
// than sent as a header clients refuse (curl stops at 100 KiB). The body is
// complete either way.
func TestListEntriesContentLocationBudget(t *testing.T) {
	for _, kind := range []region.Kind{region.Replicate, region.Partition} {
		t.Run(string(kind), func(t *testing.T) {
			ts := newTestServer(t)
			name := "loc"
			prefix := kvPrefix + "/" + name + "/"
			// Keys of 4000 bytes ("k00-xxx..."), then one that makes the
			// path exactly MaxURLBytes long.
			var keys []string
			used := len(prefix)
			for i := 0; used+4001+4001 <= MaxURLBytes; i++ {
				k := fmt.Sprintf("k%02d-", i) + strings.Repeat("x", 3996)
				keys = append(keys, k)
				used += len(k) + 1
			}
			last := fmt.Sprintf("k%02d-", len(keys)) + strings.Repeat("y", MaxURLBytes-used-4)
			keys = append(keys, last)
			var kv, vals []string
			for i, k := range keys {
				v := fmt.Sprintf(`{"i":%d}`, i)
				kv, vals = append(kv, k, v), append(vals, v)
			}
			ts.mkRegion(t, name, kind, kv...)
			path := prefix + strings.Join(keys, ",")
			if len(path) != MaxURLBytes {
				t.Fatalf("test setup: path of %d bytes, want %d", len(path), MaxURLBytes)
			}
			body := `{"loc":[` + strings.Join(vals, ",") + `]}`
			r := ts.do(t, "GET", "/kv/v1/loc?limit=ALL", "", "")
			ok(body, map[string]string{"Content-Location": "{base}" + path}).check(t, ts, r)
			// The URL it names serves those entries.
			ok(body, nil).check(t, ts, ts.do(t, "GET", path, "", ""))

			// One more key: the URL would pass the limit. No header, same
			// kind of body.
			ts.mkRegionEntries(t, name, region.Entry{Key: "z", Value: json.RawMessage(`{"i":"z"}`)})
			r = ts.do(t, "GET", "/kv/v1/loc?limit=ALL", "", "")
			if loc := r.header.Get("Content-Location"); loc != "" {
				t.Fatalf("Content-Location of %d bytes sent, want none past %d bytes of path", len(loc), MaxURLBytes)
			}
			ok(`{"loc":[`+strings.Join(vals, ",")+`,{"i":"z"}]}`, nil).check(t, ts, r)
			// A limit that leaves the last keys out brings it back.
			r = ts.do(t, "GET", fmt.Sprintf("/kv/v1/loc?limit=%d", len(keys)-1), "", "")
			ok(`{"loc":[`+strings.Join(vals[:len(keys)-1], ",")+`]}`,
				map[string]string{"Content-Location": "{base}" + prefix + strings.Join(keys[:len(keys)-1], ",")}).check(t, ts, r)
		})
	}
}

// mkRegionEntries adds entries to an existing region through the store.
func (ts *testServer) mkRegionEntries(t *testing.T, name string, entries ...region.Entry) {
	t.Helper()
	if err := ts.store.Put(context.Background(), name, entries, region.TTL{}); err != nil {
		t.Fatalf("put into %s: %v", name, err)
	}
}
