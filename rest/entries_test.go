package rest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// Two entries most cases start from.
const (
	va = `{"n":1}`
	vb = `{"n":2}`
)

const ctJSON = "application/json"

// ab seeds a region with a → va and b → vb.
func ab() []string { return []string{"a", va, "b", vb} }

func ok(body string, header map[string]string) expect {
	return expect{status: http.StatusOK, body: body, header: header}
}

func fails(status int, cause string) expect {
	return expect{status: status, cause: cause}
}

func TestListEntries(t *testing.T) {
	runCases(t, []apiCase{
		{name: "default limit", seed: ab(), method: "GET", path: "/kv/v1/{r}",
			want: ok(`{"{r}":[`+va+`,`+vb+`]}`, map[string]string{"Content-Location": "{base}/kv/v1/{r}/a,b"})},
		{name: "limit 1", seed: ab(), method: "GET", path: "/kv/v1/{r}?limit=1",
			want: ok(`{"{r}":[`+va+`]}`, map[string]string{"Content-Location": "{base}/kv/v1/{r}/a"})},
		{name: "limit ALL", seed: ab(), method: "GET", path: "/kv/v1/{r}?limit=ALL",
			want: ok(`{"{r}":[`+va+`,`+vb+`]}`, map[string]string{"Content-Location": "{base}/kv/v1/{r}/a,b"})},
		{name: "limit all in lower case", seed: ab(), method: "GET", path: "/kv/v1/{r}?limit=aLl",
			want: ok(`{"{r}":[`+va+`,`+vb+`]}`, map[string]string{"Content-Location": "{base}/kv/v1/{r}/a,b"})},
		{name: "limit above size", seed: ab(), method: "GET", path: "/kv/v1/{r}?limit=7",
			want: ok(`{"{r}":[`+va+`,`+vb+`]}`, nil)},
		{name: "limit 0", seed: ab(), method: "GET", path: "/kv/v1/{r}?limit=0",
			want: ok(`{"{r}":[]}`, map[string]string{"Content-Location": ""})},
		{name: "empty region", method: "GET", path: "/kv/v1/{r}",
			want: ok(`{"{r}":[]}`, map[string]string{"Content-Location": ""})},
		{name: "escaped keys in Content-Location", seed: []string{"a/b", va, "100%", vb, "x y", va},
			method: "GET", path: "/kv/v1/{r}",
			want: ok(`{"{r}":[`+vb+`,`+va+`,`+va+`]}`, map[string]string{"Content-Location": "{base}/kv/v1/{r}/100%25,a%2Fb,x%20y"})},
		{name: "stale read", seed: ab(), method: "GET", path: "/kv/v1/{r}?consistency=stale&limit=1",
			want: ok(`{"{r}":[`+va+`]}`, nil)},
		{name: "unknown parameter ignored", seed: ab(), method: "GET", path: "/kv/v1/{r}?limit=1&color=blue",
			want: ok(`{"{r}":[`+va+`]}`, nil)},
		{name: "negative limit", seed: ab(), method: "GET", path: "/kv/v1/{r}?limit=-1", want: fails(400, "limit")},
		{name: "limit not a number", seed: ab(), method: "GET", path: "/kv/v1/{r}?limit=ten", want: fails(400, "limit")},
		{name: "limit decimal", seed: ab(), method: "GET", path: "/kv/v1/{r}?limit=1.5", want: fails(400, "limit")},
		{name: "limit empty", seed: ab(), method: "GET", path: "/kv/v1/{r}?limit=", want: fails(400, "limit")},
		{name: "bad consistency", seed: ab(), method: "GET", path: "/kv/v1/{r}?consistency=eventual", want: fails(400, "consistency")},
		{name: "unknown region", noRegion: true, method: "GET", path: "/kv/v1/{r}", want: fails(404, "region not found")},
	})
}

func TestListEntriesDefaultLimitIs50(t *testing.T) {
	ts := newTestServer(t)
	var kv, keys, values []string
	for i := range 55 {
		k, v := fmt.Sprintf("k%02d", i), fmt.Sprintf(`{"i":%d}`, i)
		kv = append(kv, k, v)
		if i < 50 {
			keys, values = append(keys, k), append(values, v)
		}
	}
	ts.mkRegion(t, "big", region.Replicate, kv...)
	r := ts.do(t, "GET", "/kv/v1/big", "", "")
	ok(`{"big":[`+strings.Join(values, ",")+`]}`,
		map[string]string{"Content-Location": "{base}/kv/v1/big/" + strings.Join(keys, ",")}).check(t, ts, r)
}

func TestCountEntries(t *testing.T) {
	runCases(t, []apiCase{
		{name: "count", seed: ab(), method: "HEAD", path: "/kv/v1/{r}",
			want: expect{status: 200, noBody: true, header: map[string]string{"Resource-Count": "2"}}},
		{name: "empty", method: "HEAD", path: "/kv/v1/{r}",
			want: expect{status: 200, noBody: true, header: map[string]string{"Resource-Count": "0"}}},
		{name: "partitioned", kind: region.Partition, seed: ab(), method: "HEAD", path: "/kv/v1/{r}?consistency=stale",
			want: expect{status: 200, noBody: true, header: map[string]string{"Resource-Count": "2"}}},
		{name: "unknown region", noRegion: true, method: "HEAD", path: "/kv/v1/{r}",
			want: expect{status: 404, noBody: true, header: map[string]string{"Resource-Count": ""}}},
		{name: "bad consistency", method: "HEAD", path: "/kv/v1/{r}?consistency=x",
			want: expect{status: 400, noBody: true, header: map[string]string{"Resource-Count": ""}}},
	})
}

func TestListKeys(t *testing.T) {
	allowKeys := map[string]string{"Allow": "OPTIONS, GET"}
	runCases(t, []apiCase{
		{name: "keys", seed: []string{"b", vb, "a/c", va}, method: "GET", path: "/kv/v1/{r}/keys",
			want: ok(`{"keys":["a/c","b"]}`, nil)},
		{name: "empty", method: "GET", path: "/kv/v1/{r}/keys", want: ok(`{"keys":[]}`, nil)},
		{name: "stale", seed: ab(), method: "GET", path: "/kv/v1/{r}/keys?consistency=STALE", want: ok(`{"keys":["a","b"]}`, nil)},
		{name: "bad consistency", seed: ab(), method: "GET", path: "/kv/v1/{r}/keys?consistency=x", want: fails(400, "consistency")},
		{name: "unknown region", noRegion: true, method: "GET", path: "/kv/v1/{r}/keys", want: fails(404, "region not found")},
		{name: "POST", seed: ab(), method: "POST", path: "/kv/v1/{r}/keys", ctype: ctJSON, body: va, refused: true,
			want: expect{status: 405, cause: "not allowed", header: allowKeys}},
		{name: "PUT", seed: ab(), method: "PUT", path: "/kv/v1/{r}/keys", ctype: ctJSON, body: va, refused: true,
			want: expect{status: 405, cause: "not allowed", header: allowKeys}},
		{name: "DELETE", seed: ab(), method: "DELETE", path: "/kv/v1/{r}/keys", refused: true,
			want: expect{status: 405, cause: "not allowed", header: allowKeys}},
		{name: "PATCH", seed: ab(), method: "PATCH", path: "/kv/v1/{r}/keys", ctype: ctJSON, body: va, refused: true,
			want: expect{status: 405, cause: "not allowed", header: allowKeys}},
		{name: "OPTIONS", method: "OPTIONS", path: "/kv/v1/{r}/keys",
			want: expect{status: 204, header: allowKeys}},
	})
}

func TestGetEntries(t *testing.T) {
	runCases(t, []apiCase{
		{name: "one key", seed: ab(), method: "GET", path: "/kv/v1/{r}/a",
			want: ok(va, map[string]string{"Content-Location": "{base}/kv/v1/{r}/a"})},
		{name: "missing key", seed: ab(), method: "GET", path: "/kv/v1/{r}/zz", want: fails(404, "key not found")},
		{name: "invalid key reads as missing", seed: ab(), method: "GET", path: "/kv/v1/{r}/%01", want: fails(404, "key not found")},
		{name: "unknown region", noRegion: true, method: "GET", path: "/kv/v1/{r}/a", want: fails(404, "region not found")},
		{name: "two keys", seed: ab(), method: "GET", path: "/kv/v1/{r}/a,b",
			want: ok(`{"{r}":[`+va+`,`+vb+`]}`, map[string]string{"Content-Location": "{base}/kv/v1/{r}/a,b"})},
		{name: "request order", seed: ab(), method: "GET", path: "/kv/v1/{r}/b,a",
			want: ok(`{"{r}":[`+vb+`,`+va+`]}`, map[string]string{"Content-Location": "{base}/kv/v1/{r}/b,a"})},
		{name: "duplicates allowed on reads", seed: ab(), method: "GET", path: "/kv/v1/{r}/a,b,a",
			want: ok(`{"{r}":[`+va+`,`+vb+`,`+va+`]}`, nil)},
		{name: "missing key in list", seed: ab(), method: "GET", path: "/kv/v1/{r}/a,zz", want: fails(400, `"zz"`)},
		{name: "missing key with ignoreMissingKey=false", seed: ab(), method: "GET", path: "/kv/v1/{r}/a,zz?ignoreMissingKey=false", want: fails(400, `"zz"`)},
		{name: "ignoreMissingKey=true", seed: ab(), method: "GET", path: "/kv/v1/{r}/zz,a?ignoreMissingKey=true",
			want: ok(`{"{r}":[null,`+va+`]}`, map[string]string{"Content-Location": "{base}/kv/v1/{r}/zz,a"})},
		{name: "ignoreMissingKey=TRUE", seed: ab(), method: "GET", path: "/kv/v1/{r}/a,zz?ignoreMissingKey=TRUE",
			want: ok(`{"{r}":[`+va+`,null]}`, nil)},
		{name: "ignoreMissingKey=yes", seed: ab(), method: "GET", path: "/kv/v1/{r}/a,b?ignoreMissingKey=yes", want: fails(400, "ignoreMissingKey")},
		{name: "empty key in list", seed: ab(), method: "GET", path: "/kv/v1/{r}/a,,b", want: fails(400, "empty key")},
		{name: "trailing comma", seed: ab(), method: "GET", path: "/kv/v1/{r}/a,", want: fails(400, "empty key")},
		{name: "leading comma", seed: ab(), method: "GET", path: "/kv/v1/{r}/,a", want: fails(400, "empty key")},
		{name: "only a comma", seed: ab(), method: "GET", path: "/kv/v1/{r}/,", want: fails(400, "empty key")},
		{name: "stale", seed: ab(), method: "GET", path: "/kv/v1/{r}/b?consistency=stale", want: ok(vb, nil)},
		{name: "bad consistency", seed: ab(), method: "GET", path: "/kv/v1/{r}/a?consistency=x", want: fails(400, "consistency")},
		{name: "unknown region, two keys", noRegion: true, method: "GET", path: "/kv/v1/{r}/a,b", want: fails(404, "region not found")},
	})
}

func TestCreateEntry(t *testing.T) {
	runCases(t, []apiCase{
		{name: "with key", seed: ab(), method: "POST", path: "/kv/v1/{r}?key=c", ctype: ctJSON, body: `{"n":3}`,
			want: expect{status: 201, header: map[string]string{"Location": "{base}/kv/v1/{r}/c", "Content-Type": ""}},
			then: []step{{"GET", "/kv/v1/{r}/c", ok(`{"n":3}`, nil)}}},
		{name: "key needing escapes", method: "POST", path: "/kv/v1/{r}?key=a%2Fb%25", ctype: ctJSON, body: va,
			want: expect{status: 201, header: map[string]string{"Location": "{base}/kv/v1/{r}/a%2Fb%25"}},
			then: []step{{"GET", "/kv/v1/{r}/a%2Fb%25", ok(va, nil)}}},
		{name: "body is compacted", method: "POST", path: "/kv/v1/{r}?key=k", ctype: ctJSON, body: " {\n \"b\" : 1 ,\n \"a\" : [ 1 , 2 ] }\n",
			want: expect{status: 201},
			then: []step{{"GET", "/kv/v1/{r}/k", ok(`{"b":1,"a":[1,2]}`, nil)}}},
		{name: "charset parameter", method: "POST", path: "/kv/v1/{r}?key=k", ctype: "application/json; charset=UTF-8", body: va,
			want: expect{status: 201}},
		{name: "content type in upper case", method: "POST", path: "/kv/v1/{r}?key=k", ctype: "Application/JSON", body: va,
			want: expect{status: 201}},
		{name: "key exists", seed: ab(), method: "POST", path: "/kv/v1/{r}?key=a", ctype: ctJSON, body: `{"n":9}`, refused: true,
			want: expect{status: 409, body: va, header: map[string]string{"Location": "{base}/kv/v1/{r}/a", "Content-Type": contentTypeJSON}}},
		{name: "empty key parameter", seed: ab(), method: "POST", path: "/kv/v1/{r}?key=", ctype: ctJSON, body: va, refused: true,
			want: fails(400, "key is empty")},
		{name: "invalid key", seed: ab(), method: "POST", path: "/kv/v1/{r}?key=x%2Cy", ctype: ctJSON, body: va, refused: true,
			want: fails(400, "','")},
		{name: "unknown region", noRegion: true, method: "POST", path: "/kv/v1/{r}?key=a", ctype: ctJSON, body: va,
			want: fails(404, "region not found")},
		{name: "malformed JSON", seed: ab(), method: "POST", path: "/kv/v1/{r}?key=c", ctype: ctJSON, body: `{"n":`, refused: true,
			want: fails(400, "malformed JSON")},
		{name: "array value", seed: ab(), method: "POST", path: "/kv/v1/{r}?key=c", ctype: ctJSON, body: `[1,2]`, refused: true,
			want: fails(400, "array")},
		{name: "scalar value", seed: ab(), method: "POST", path: "/kv/v1/{r}?key=c", ctype: ctJSON, body: `42`, refused: true,
			want: fails(400, "number")},
		{name: "null value", seed: ab(), method: "POST", path: "/kv/v1/{r}?key=c", ctype: ctJSON, body: `null`, refused: true,
			want: fails(400, "null")},
		{name: "empty body", seed: ab(), method: "POST", path: "/kv/v1/{r}?key=c", ctype: ctJSON, refused: true,
			want: fails(400, "empty")},
		{name: "trailing data", seed: ab(), method: "POST", path: "/kv/v1/{r}?key=c", ctype: ctJSON, body: `{"n":1} {}`, refused: true,
			want: fails(400, "malformed JSON")},
		{name: "text/plain", seed: ab(), method: "POST", path: "/kv/v1/{r}?key=c", ctype: "text/plain", body: va, refused: true,
			want: fails(415, "text/plain")},
		{name: "no content type", seed: ab(), method: "POST", path: "/kv/v1/{r}?key=c", body: va, refused: true,
			want: fails(415, "application/json")},
		{name: "json-like content type", seed: ab(), method: "POST", path: "/kv/v1/{r}?key=c", ctype: "application/jsonx", body: va, refused: true,
			want: fails(415, "application/jsonx")},
	})
}

// TestCreateEntryGeneratesKey: without ?key the store picks the key, and
// Location names it.
func TestCreateEntryGeneratesKey(t *testing.T) {
	ts := newTestServer(t)
	ts.mkRegion(t, "orders", region.Replicate)
	prefix := ts.base + "/kv/v1/orders/"
	seen := map[string]bool{}
	for i := range 3 {
		body := fmt.Sprintf(`{"i":%d}`, i)
		r := ts.do(t, "POST", "/kv/v1/orders", ctJSON, body)
		expect{status: 201}.check(t, ts, r)
		loc := r.header.Get("Location")
		key, found := strings.CutPrefix(loc, prefix)
		if !found || key == "" {
			t.Fatalf("Location = %q, want %s<key>", loc, prefix)
		}
		if seen[key] {
			t.Fatalf("generated key %q twice", key)
		}
		seen[key] = true
		ok(body, nil).check(t, ts, ts.do(t, "GET", "/kv/v1/orders/"+key, "", ""))
	}
}

func TestPutEntry(t *testing.T) {
	runCases(t, []apiCase{
		{name: "create", seed: ab(), method: "PUT", path: "/kv/v1/{r}/c", ctype: ctJSON, body: `{"n":3}`,
			want: expect{status: 200, header: map[string]string{"Content-Type": ""}},
			then: []step{{"GET", "/kv/v1/{r}/c", ok(`{"n":3}`, nil)}}},
		{name: "overwrite", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a", ctype: ctJSON, body: `{"n":3}`,
			want: expect{status: 200}, then: []step{{"GET", "/kv/v1/{r}/a", ok(`{"n":3}`, nil)}}},
		{name: "op=PUT", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=PUT", ctype: ctJSON, body: `{"n":3}`,
			want: expect{status: 200}, then: []step{{"GET", "/kv/v1/{r}/a", ok(`{"n":3}`, nil)}}},
		{name: "op=put", seed: ab(), method: "PUT", path: "/kv/v1/{r}/c?op=put", ctype: ctJSON, body: `{"n":3}`,
			want: expect{status: 200}, then: []step{{"GET", "/kv/v1/{r}/c", ok(`{"n":3}`, nil)}}},
		{name: "replace", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=REPLACE", ctype: ctJSON, body: `{"n":3}`,
			want: expect{status: 200}, then: []step{{"GET", "/kv/v1/{r}/a", ok(`{"n":3}`, nil)}}},
		{name: "replace in lower case", seed: ab(), method: "PUT", path: "/kv/v1/{r}/b?op=replace", ctype: ctJSON, body: `{"n":3}`,
			want: expect{status: 200}, then: []step{{"GET", "/kv/v1/{r}/b", ok(`{"n":3}`, nil)}}},
		{name: "replace missing key", seed: ab(), method: "PUT", path: "/kv/v1/{r}/c?op=REPLACE", ctype: ctJSON, body: `{"n":3}`, refused: true,
			want: fails(400, "not present")},
		{name: "cas", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=CAS", ctype: ctJSON, body: `{"@old":` + va + `,"@new":{"n":3}}`,
			want: expect{status: 200}, then: []step{{"GET", "/kv/v1/{r}/a", ok(`{"n":3}`, nil)}}},
		{name: "cas ignores member order", seed: []string{"a", `{"x":1,"y":"s"}`}, method: "PUT", path: "/kv/v1/{r}/a?op=cas", ctype: ctJSON,
			body: `{"@new":{"n":3},"@old":{"y":"s","x":1}}`,
			want: expect{status: 200}, then: []step{{"GET", "/kv/v1/{r}/a", ok(`{"n":3}`, nil)}}},
		{name: "cas mismatch", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=CAS", ctype: ctJSON, body: `{"@old":{"n":7},"@new":{"n":3}}`, refused: true,
			want: expect{status: 409, body: va, header: map[string]string{"Location": "{base}/kv/v1/{r}/a"}}},
		{name: "cas 1 is not 1.0", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=CAS", ctype: ctJSON, body: `{"@old":{"n":1.0},"@new":{"n":3}}`, refused: true,
			want: expect{status: 409, body: va, header: map[string]string{"Location": "{base}/kv/v1/{r}/a"}}},
		{name: "cas missing key", seed: ab(), method: "PUT", path: "/kv/v1/{r}/c?op=CAS", ctype: ctJSON, body: `{"@old":` + va + `,"@new":{"n":3}}`, refused: true,
			want: fails(400, "not present")},
		{name: "cas without @old", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=CAS", ctype: ctJSON, body: `{"@new":{"n":3}}`, refused: true,
			want: fails(400, "@old and @new")},
		{name: "cas without @new", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=CAS", ctype: ctJSON, body: `{"@old":` + va + `}`, refused: true,
			want: fails(400, "@old and @new")},
		{name: "cas @new not an object", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=CAS", ctype: ctJSON, body: `{"@old":` + va + `,"@new":3}`, refused: true,
			want: fails(400, "@new")},
		{name: "cas @old an array", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=CAS", ctype: ctJSON, body: `{"@old":[1],"@new":{"n":3}}`, refused: true,
			want: fails(400, "@old")},
		{name: "cas extra member", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=CAS", ctype: ctJSON, body: `{"@old":` + va + `,"@new":{"n":3},"x":1}`, refused: true,
			want: fails(400, `"x"`)},
		{name: "cas member twice", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=CAS", ctype: ctJSON, body: `{"@old":` + va + `,"@old":` + va + `,"@new":{"n":3}}`, refused: true,
			want: fails(400, "twice")},
		{name: "cas body not an object", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=CAS", ctype: ctJSON, body: `[` + va + `]`, refused: true,
			want: fails(400, "not a JSON object")},
		{name: "cas malformed", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=CAS", ctype: ctJSON, body: `{"@old":{"n":1},"@new":{"n":`, refused: true,
			want: fails(400, "malformed JSON")},
		{name: "cas empty body", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=CAS", ctype: ctJSON, refused: true,
			want: fails(400, "not a JSON object")},
		{name: "unknown op", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=MERGE", ctype: ctJSON, body: `{"n":3}`, refused: true,
			want: fails(400, "MERGE")},
		{name: "empty op", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a?op=", ctype: ctJSON, body: `{"n":3}`, refused: true,
			want: fails(400, "op")},
		{name: "unknown region", noRegion: true, method: "PUT", path: "/kv/v1/{r}/a", ctype: ctJSON, body: va,
			want: fails(404, "region not found")},
		{name: "unknown region, replace", noRegion: true, method: "PUT", path: "/kv/v1/{r}/a?op=REPLACE", ctype: ctJSON, body: va,
			want: fails(404, "region not found")},
		{name: "unknown region, cas", noRegion: true, method: "PUT", path: "/kv/v1/{r}/a?op=CAS", ctype: ctJSON, body: `{"@old":` + va + `,"@new":` + va + `}`,
			want: fails(404, "region not found")},
		{name: "invalid key", seed: ab(), method: "PUT", path: "/kv/v1/{r}/x%01", ctype: ctJSON, body: va, refused: true,
			want: fails(400, "control character")},
		{name: "array value", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a", ctype: ctJSON, body: `[` + va + `]`, refused: true,
			want: fails(400, "array")},
		{name: "string value", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a", ctype: ctJSON, body: `"s"`, refused: true,
			want: fails(400, "string")},
		{name: "malformed JSON", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a", ctype: ctJSON, body: `{a:1}`, refused: true,
			want: fails(400, "malformed JSON")},
		{name: "text/plain", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a", ctype: "text/plain; charset=utf-8", body: va, refused: true,
			want: fails(415, "text/plain")},
		{name: "no content type", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a", body: va, refused: true,
			want: fails(415, "Content-Type")},
	})
}

func TestPutEntries(t *testing.T) {
	runCases(t, []apiCase{
		{name: "put all", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,c", ctype: ctJSON, body: `[{"n":10},{"n":30}]`,
			want: expect{status: 200},
			then: []step{{"GET", "/kv/v1/{r}?limit=ALL", ok(`{"{r}":[{"n":10},`+vb+`,{"n":30}]}`, nil)}}},
		{name: "put all, op=PUT", method: "PUT", path: "/kv/v1/{r}/x,y?op=PUT", ctype: ctJSON, body: ` [ {"n":1} , {"n":2} ] `,
			want: expect{status: 200},
			then: []step{{"GET", "/kv/v1/{r}/x,y", ok(`{"{r}":[{"n":1},{"n":2}]}`, nil)}}},
		{name: "replace all", seed: ab(), method: "PUT", path: "/kv/v1/{r}/b,a?op=REPLACE", ctype: ctJSON, body: `[{"n":20},{"n":10}]`,
			want: expect{status: 200},
			then: []step{{"GET", "/kv/v1/{r}/a,b", ok(`{"{r}":[{"n":10},{"n":20}]}`, nil)}}},
		{name: "replace with a missing key", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,c?op=REPLACE", ctype: ctJSON, body: `[{"n":10},{"n":30}]`, refused: true,
			want: fails(400, "not present")},
		{name: "cas all", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,b?op=CAS", ctype: ctJSON,
			body: `[{"@old":` + va + `,"@new":{"n":10}},{"@old":` + vb + `,"@new":{"n":20}}]`,
			want: expect{status: 200},
			then: []step{{"GET", "/kv/v1/{r}/a,b", ok(`{"{r}":[{"n":10},{"n":20}]}`, nil)}}},
		{name: "cas, second pair mismatches", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,b?op=CAS", ctype: ctJSON,
			body: `[{"@old":` + va + `,"@new":{"n":10}},{"@old":{"n":0},"@new":{"n":20}}]`, refused: true,
			want: expect{status: 409, body: vb, header: map[string]string{"Location": "{base}/kv/v1/{r}/b"}}},
		{name: "cas, both mismatch: first one answers", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,b?op=CAS", ctype: ctJSON,
			body: `[{"@old":{"n":0},"@new":{"n":10}},{"@old":{"n":0},"@new":{"n":20}}]`, refused: true,
			want: expect{status: 409, body: va, header: map[string]string{"Location": "{base}/kv/v1/{r}/a"}}},
		{name: "cas with a missing key", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,c?op=CAS", ctype: ctJSON,
			body: `[{"@old":` + va + `,"@new":{"n":10}},{"@old":` + vb + `,"@new":{"n":20}}]`, refused: true,
			want: fails(400, "not present")},
		{name: "cas element not a pair", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,b?op=CAS", ctype: ctJSON,
			body: `[{"@old":` + va + `,"@new":{"n":10}},{"n":20}]`, refused: true,
			want: fails(400, `"n"`)},
		{name: "too few values", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,b,c", ctype: ctJSON, body: `[{"n":1},{"n":2}]`, refused: true,
			want: fails(400, "2 values for 3 keys")},
		{name: "too many values", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,b", ctype: ctJSON, body: `[{"n":1},{"n":2},{"n":3}]`, refused: true,
			want: fails(400, "3 values for 2 keys")},
		{name: "not an array", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,b", ctype: ctJSON, body: `{"n":1}`, refused: true,
			want: fails(400, "JSON array")},
		{name: "element not an object", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,b", ctype: ctJSON, body: `[{"n":1},2]`, refused: true,
			want: fails(400, "number")},
		{name: "malformed element", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,b", ctype: ctJSON, body: `[{"n":1},{"n"}]`, refused: true,
			want: fails(400, "malformed JSON")},
		{name: "data after the array", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,b", ctype: ctJSON, body: `[{"n":1},{"n":2}]]`, refused: true,
			want: fails(400, "malformed JSON")},
		{name: "unclosed array", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,b", ctype: ctJSON, body: `[{"n":1},{"n":2}`, refused: true,
			want: fails(400, "malformed JSON")},
		{name: "duplicate keys", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,a", ctype: ctJSON, body: `[{"n":1},{"n":2}]`, refused: true,
			want: fails(400, "more than once")},
		{name: "empty key", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,,b", ctype: ctJSON, body: `[{"n":1},{"n":2}]`, refused: true,
			want: fails(400, "empty key")},
		{name: "unknown region", noRegion: true, method: "PUT", path: "/kv/v1/{r}/a,b", ctype: ctJSON, body: `[{"n":1},{"n":2}]`,
			want: fails(404, "region not found")},
		{name: "text/plain", seed: ab(), method: "PUT", path: "/kv/v1/{r}/a,b", ctype: "text/plain", body: `[{"n":1},{"n":2}]`, refused: true,
			want: fails(415, "text/plain")},
	})
}

func TestDeleteEntries(t *testing.T) {
	runCases(t, []apiCase{
		{name: "one key", seed: ab(), method: "DELETE", path: "/kv/v1/{r}/a",
			want: expect{status: 200},
			then: []step{{"GET", "/kv/v1/{r}/a", fails(404, "key not found")}, {"GET", "/kv/v1/{r}/b", ok(vb, nil)}}},
		{name: "two keys", seed: []string{"a", va, "b", vb, "c", va}, method: "DELETE", path: "/kv/v1/{r}/a,c",
			want: expect{status: 200},
			then: []step{{"GET", "/kv/v1/{r}/keys", ok(`{"keys":["b"]}`, nil)}}},
		{name: "missing key", seed: ab(), method: "DELETE", path: "/kv/v1/{r}/zz", refused: true, want: fails(404, "key not found")},
		{name: "one key of two missing", seed: ab(), method: "DELETE", path: "/kv/v1/{r}/a,zz", refused: true, want: fails(404, "key not found")},
		{name: "duplicate keys", seed: ab(), method: "DELETE", path: "/kv/v1/{r}/a,a", refused: true, want: fails(400, "more than once")},
		{name: "empty key", seed: ab(), method: "DELETE", path: "/kv/v1/{r}/a,", refused: true, want: fails(400, "empty key")},
		{name: "invalid key", seed: ab(), method: "DELETE", path: "/kv/v1/{r}/%7F", refused: true, want: fails(400, "control character")},
		{name: "unknown region", noRegion: true, method: "DELETE", path: "/kv/v1/{r}/a", want: fails(404, "region not found")},
	})
}

func TestClearRegion(t *testing.T) {
	runCases(t, []apiCase{
		{name: "replicated", kind: region.Replicate, seed: ab(), method: "DELETE", path: "/kv/v1/{r}",
			want: expect{status: 200},
			then: []step{{"HEAD", "/kv/v1/{r}", expect{status: 200, noBody: true, header: map[string]string{"Resource-Count": "0"}}}}},
		{name: "empty", kind: region.Replicate, method: "DELETE", path: "/kv/v1/{r}", want: expect{status: 200}},
		{name: "empty partitioned", kind: region.Partition, method: "DELETE", path: "/kv/v1/{r}", refused: true,
			want: expect{status: 405, cause: "not supported", header: map[string]string{"Allow": "OPTIONS, GET, HEAD, POST"}}},
		{name: "partitioned", kind: region.Partition, seed: ab(), method: "DELETE", path: "/kv/v1/{r}", refused: true,
			want: expect{status: 405, cause: "not supported", header: map[string]string{"Allow": "OPTIONS, GET, HEAD, POST"}}},
		{name: "unknown region", noRegion: true, method: "DELETE", path: "/kv/v1/{r}", want: fails(404, "region not found")},
	})
}

// TestMethodNotAllowed: methods a path does not take answer 405 with Allow
// and a JSON cause, and change nothing.
func TestMethodNotAllowed(t *testing.T) {
	allowEntry := map[string]string{"Allow": "OPTIONS, DELETE, GET, PUT"}
	allowRegion := map[string]string{"Allow": "OPTIONS, DELETE, GET, HEAD, POST"}
	runCases(t, []apiCase{
		{name: "POST to an entry", seed: ab(), method: "POST", path: "/kv/v1/{r}/a", ctype: ctJSON, body: vb, refused: true,
			want: expect{status: 405, cause: "POST", header: allowEntry}},
		{name: "POST to entries", seed: ab(), method: "POST", path: "/kv/v1/{r}/a,b", ctype: ctJSON, body: `[]`, refused: true,
			want: expect{status: 405, cause: "POST", header: allowEntry}},
		{name: "PATCH a region", seed: ab(), method: "PATCH", path: "/kv/v1/{r}", ctype: ctJSON, body: va, refused: true,
			want: expect{status: 405, cause: "PATCH", header: allowRegion}},
		{name: "PUT a region", seed: ab(), method: "PUT", path: "/kv/v1/{r}", ctype: ctJSON, body: va, refused: true,
			want: expect{status: 405, cause: "PUT", header: allowRegion}},
		{name: "PATCH an unknown region", noRegion: true, method: "PATCH", path: "/kv/v1/{r}", ctype: ctJSON, body: va,
			want: expect{status: 405, cause: "PATCH", header: allowRegion}},
	})
}
