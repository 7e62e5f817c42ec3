package rest

import (
	"strings"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// TestValueFidelity: values come back exactly as sent (after removing
// insignificant whitespace), through every way in and out.
func TestValueFidelity(t *testing.T) {
	ts := newTestServer(t)
	ts.mkRegion(t, "v", region.Replicate)
	for _, tc := range []struct{ name, in, out string }{
		{"member order", `{"z":1,"a":2,"m":{"y":true,"b":null}}`, `{"z":1,"a":2,"m":{"y":true,"b":null}}`},
		{"decimals stay decimals", `{"price":10.0,"rate":1e3,"neg":-0.50}`, `{"price":10.0,"rate":1e3,"neg":-0.50}`},
		{"largest int64", `{"n":9223372036854775807,"m":-9223372036854775808}`, `{"n":9223372036854775807,"m":-9223372036854775808}`},
		{"beyond int64", `{"n":123456789012345678901234567890}`, `{"n":123456789012345678901234567890}`},
		{"unicode", `{"s":"héllo wörld ✓ 😀","k":"日本"}`, `{"s":"héllo wörld ✓ 😀","k":"日本"}`},
		{"escapes kept", `{"s":"\u00e9\n\"q\" <b>&amp;","t":"\/"}`, `{"s":"\u00e9\n\"q\" <b>&amp;","t":"\/"}`},
		{"@type", `{"@type":"com.example.Order","purchaseOrderNo":1,"items":[{"itemNo":1,"unitPrice":2.50}]}`,
			`{"@type":"com.example.Order","purchaseOrderNo":1,"items":[{"itemNo":1,"unitPrice":2.50}]}`},
		{"whitespace removed", "{ \"a\" :\t[ 1 , 2 ] ,\n\"b\" : { } }", `{"a":[1,2],"b":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := strings.ReplaceAll(tc.name, " ", "-")
			expect{status: 200}.check(t, ts, ts.do(t, "PUT", "/kv/v1/v/"+key, ctJSON, tc.in))
			ok(tc.out, nil).check(t, ts, ts.do(t, "GET", "/kv/v1/v/"+key, "", ""))
			ok(`{"v":[`+tc.out+`,`+tc.out+`]}`, nil).check(t, ts, ts.do(t, "GET", "/kv/v1/v/"+key+","+key, "", ""))

			// Through POST, multi-key PUT and the region listing too.
			expect{status: 201}.check(t, ts, ts.do(t, "POST", "/kv/v1/v?key=post-"+key, ctJSON, tc.in))
			ok(tc.out, nil).check(t, ts, ts.do(t, "GET", "/kv/v1/v/post-"+key, "", ""))
			expect{status: 200}.check(t, ts, ts.do(t, "PUT", "/kv/v1/v/m1-"+key+",m2-"+key, ctJSON, "["+tc.in+",\n"+tc.in+"]"))
			ok(`{"v":[`+tc.out+`,`+tc.out+`]}`, nil).check(t, ts, ts.do(t, "GET", "/kv/v1/v/m1-"+key+",m2-"+key, "", ""))

			// And a CAS swaps in @new as sent.
			expect{status: 200}.check(t, ts, ts.do(t, "PUT", "/kv/v1/v/"+key+"?op=CAS", ctJSON,
				`{"@old":`+tc.in+`,"@new":`+tc.in+`}`))
			ok(tc.out, nil).check(t, ts, ts.do(t, "GET", "/kv/v1/v/"+key, "", ""))
		})
	}
}

// TestConflictBodyIsStoredValue: the 409 body of a put-if-absent and of a
// CAS is the stored value byte for byte.
func TestConflictBodyIsStoredValue(t *testing.T) {
	ts := newTestServer(t)
	stored := `{"price":10.0,"n":9223372036854775807,"s":"ü"}`
	ts.mkRegion(t, "c", region.Replicate, "k", stored)
	want := expect{status: 409, body: stored, header: map[string]string{"Location": "{base}/kv/v1/c/k"}}
	want.check(t, ts, ts.do(t, "POST", "/kv/v1/c?key=k", ctJSON, `{}`))
	want.check(t, ts, ts.do(t, "PUT", "/kv/v1/c/k?op=CAS", ctJSON, `{"@old":{"price":10},"@new":{}}`))
}
