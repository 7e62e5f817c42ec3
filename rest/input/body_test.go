package input

import (
	"strings"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// TestParseArray: a multi-key body's elements keep their bytes as sent,
// and must be one per key.
func TestParseArray(t *testing.T) {
	elems, err := ParseArray([]byte(`[ {"p":10.0} ,{"n":9223372036854775807}]`), 2)
	checkErr(t, err, "")
	if len(elems) != 2 || string(elems[0]) != `{"p":10.0}` || string(elems[1]) != `{"n":9223372036854775807}` {
		t.Errorf("elements %q, want the bytes as sent", elems)
	}
	for body, want := range map[string]string{
		`{"a":1}`:    "invalid request: a multi-key PUT needs a JSON array of 2 values, one per key",
		`[{},{},{}]`: "invalid request: the body has 3 values for 2 keys",
		`[{},{}] x`:  `invalid request: malformed JSON: data after the closing "]"`,
		`[{},{}`:     `invalid request: malformed JSON: expected "]"`,
	} {
		_, err := ParseArray([]byte(body), 2)
		checkErr(t, err, want)
	}
}

// TestParseCASPair: exactly @old and @new, both objects.
func TestParseCASPair(t *testing.T) {
	oldV, newV, err := ParseCASPair([]byte(`{"@new":{"a":2.0},"@old":{"a":1}}`))
	checkErr(t, err, "")
	if string(oldV) != `{"a":1}` || string(newV) != `{"a":2.0}` {
		t.Errorf("old %s new %s", oldV, newV)
	}
	const shape = `invalid request: a CAS body is {"@old":{...},"@new":{...}}: `
	for body, want := range map[string]string{
		`[]`:                              shape + "the body is not a JSON object",
		`{"@old":{}}`:                     shape + "@old and @new are both required",
		`{"@old":{},"@new":{},"x":{}}`:    shape + `unexpected member "x"`,
		`{"@old":{},"@old":{},"@new":{}}`: shape + `member "@old" appears twice`,
		`{"@old":{},"@new":{}} {}`:        `invalid request: malformed JSON: data after the closing "}"`,
	} {
		_, _, err := ParseCASPair([]byte(body))
		checkErr(t, err, want)
	}
	if _, _, err := ParseCASPair([]byte(`{"@old":1,"@new":{}}`)); err == nil || !strings.HasPrefix(err.Error(), "CAS member @old: ") {
		t.Errorf("a scalar @old: %v, want the member named", err)
	}
}

// TestManagementBodies: region, index and function bodies are decoded
// strictly, with the shape of a valid body in the cause.
func TestManagementBodies(t *testing.T) {
	info, err := ParseRegionConfig([]byte(`{"name":"orders","type":"PARTITION"}`))
	checkErr(t, err, "")
	if info != (region.Info{Name: "orders", Kind: region.Partition}) {
		t.Errorf("region %+v", info)
	}
	_, err = ParseRegionConfig([]byte(`{"name":"orders","type":"REPLICATE","scope":"x"}`))
	checkErr(t, err, `invalid request: a region is {"name":"...","type":"REPLICATE"|"PARTITION","entryTimeToLive":SECONDS}: json: unknown field "scope"`)
	_, err = ParseRegionConfig([]byte(`{"name":"orders","type":"REPLICATE"}{}`))
	checkErr(t, err, "invalid request: malformed JSON: data after the region object")

	def, err := ParseIndex("orders", []byte(`{"name":"byCustomer","expression":"o.customerId","from":"/orders o"}`))
	checkErr(t, err, "")
	if def.Name != "byCustomer" || def.Expression != "o.customerId" || def.From != "/orders o" {
		t.Errorf("index %+v", def)
	}
	_, err = ParseIndex("100%", []byte(`{"name":"i","unique":true}`))
	checkErr(t, err, `invalid request: an index is {"name":"...","expression":"o.customerId","from":"/100% o"} `+
		`or, as in Geode, {"name":"...","expression":"customerId","regionPath":"/100%","indexType":"RANGE"}: json: unknown field "unique"`)

	spec, err := ParseFunctionSpec([]byte(`{"source":"function execute(ctx) {}"}`))
	checkErr(t, err, "")
	if !spec.HasResult || spec.Source != "function execute(ctx) {}" {
		t.Errorf("function %+v: hasResult defaults to true", spec)
	}
	spec, err = ParseFunctionSpec([]byte(`{"source":"","hasResult":false,"timeout":"2s"}`))
	checkErr(t, err, "")
	if spec.HasResult || spec.Timeout != "2s" {
		t.Errorf("function %+v", spec)
	}
	_, err = ParseFunctionSpec([]byte(`{"permission":"DATA:READ"}`))
	checkErr(t, err, `invalid request: "source" is required`)
	_, err = ParseFunctionSpec([]byte(`{"source":"x"} 1`))
	checkErr(t, err, "invalid request: malformed JSON: data after the function object")
}

// TestParseGeodeIndex: Geode's index body, {"name","expression",
// "regionPath","indexType"}, is accepted beside kvnode's and becomes
// kvnode's definition, regionPath as the FROM clause.
func TestParseGeodeIndex(t *testing.T) {
	for _, tc := range []struct{ body, from string }{
		{`{"name":"i","expression":"customerId","regionPath":"/orders","indexType":"RANGE"}`, "/orders"},
		{`{"name":"i","expression":"customerId","regionPath":"orders","indexType":"hash"}`, "/orders"},
		{`{"name":"i","expression":"o.customerId","regionPath":"/orders o","indexType":"KEY"}`, "/orders o"},
		{`{"name":"i","expression":"customerId","regionPath":"/orders","indexType":"PRIMARY_KEY"}`, "/orders"},
		{`{"name":"i","expression":"customerId","regionPath":"/orders","indexType":"FUNCTIONAL"}`, "/orders"},
		{`{"name":"i","expression":"customerId","regionPath":" /orders "}`, "/orders"},
	} {
		def, err := ParseIndex("orders", []byte(tc.body))
		checkErr(t, err, "")
		if def.Name != "i" || def.From != tc.from || def.Expression == "" || def.Region != "" || def.Path != nil {
			t.Errorf("ParseIndex(%s) = %+v, want from %q", tc.body, def, tc.from)
		}
	}
	for body, want := range map[string]string{
		`{"name":"i","expression":"x","regionPath":"/orders","indexType":"BTREE"}`: `invalid request: indexType "BTREE" is not RANGE, HASH or KEY`,
		`{"name":"i","expression":"x","indexType":"RANGE"}`:                        `invalid request: a Geode index body needs "regionPath", e.g. "/orders"`,
		`{"name":"i","expression":"x","regionPath":"","indexType":"RANGE"}`:        `invalid request: a Geode index body needs "regionPath", e.g. "/orders"`,
		`{"name":"i","expression":"x","from":"/orders o","regionPath":"/orders"}`:  `invalid request: an index has "from" (kvnode's shape) or "regionPath" and "indexType" (Geode's), not both`,
		`{"name":"i","expression":"x","regionPath":1}`:                             `invalid request: an index is {"name":"...","expression":"o.customerId","from":"/orders o"} or, as in Geode, {"name":"...","expression":"customerId","regionPath":"/orders","indexType":"RANGE"}: json: cannot unmarshal number into Go struct field .regionPath of type string`,
	} {
		_, err := ParseIndex("orders", []byte(body))
		checkErr(t, err, want)
	}
}

// TestEntriesFastPathAgreesWithElementwise: the one-pass reading of a
// multi-key body (compact, cut in place) answers exactly what reading it
// element by element answers, values and errors alike.
func TestEntriesFastPathAgreesWithElementwise(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 65) + "1" + strings.Repeat("}", 65)
	bodies := []string{
		`[{"a":1},{"b":[1,2,{"c":"],}"}]}]`,
		"[ {\"p\" : 10.0 } ,\n\t{ \"s\":\"a\\\"],[{\" } ]",
		`[{"u":"\u00e9\ud83d\ude00"},{"e":""}]`,
		`[{"a":1},[1]]`,
		`[{"a":1},"x"]`,
		`[{"a":1},` + deep + `]`,
		`[{"a":1},{"b":2},{"c":3}]`,
		`[{"a":1}]`,
		`[{"a":1},{"b":2}`,
		`[{"a":1},{"b":2}] x`,
		"[{\"a\":\"\xff\"},{\"b\":2}]",
		`{"a":1}`,
		`[{"a":1},{"b":2},]`,
		`[{"a":1},,{"b":2}]`,
		`[]`,
	}
	keys := []string{"k1", "k2"}
	for _, body := range bodies[:6] {
		if _, ok := splitCompacted([]byte(body), len(keys)); !ok {
			t.Fatalf("%q does not take the one-pass way", body)
		}
	}
	for _, body := range bodies {
		got, gotErr := Entries([]byte(body), keys)
		var want []region.Entry
		elems, wantErr := ParseArray([]byte(body), len(keys))
		if wantErr == nil {
			for i, k := range keys {
				v, err := region.NormalizeValue(elems[i])
				if err != nil {
					wantErr = WithElement(err, keys, i)
					break
				}
				want = append(want, region.Entry{Key: k, Value: v})
			}
		}
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Errorf("%q: error %v, element by element %v", body, gotErr, wantErr)
			continue
		}
		if wantErr != nil {
			continue
		}
		for i := range want {
			if got[i].Key != want[i].Key || string(got[i].Value) != string(want[i].Value) {
				t.Errorf("%q: entry %d = %s %s, element by element %s %s", body, i, got[i].Key, got[i].Value, want[i].Key, want[i].Value)
			}
		}
	}
	// One key: the body is the value.
	got, err := Entries([]byte(` {"a" : 1} `), []string{"k"})
	if err != nil || len(got) != 1 || string(got[0].Value) != `{"a":1}` {
		t.Errorf("one key: %v %v", got, err)
	}
}
