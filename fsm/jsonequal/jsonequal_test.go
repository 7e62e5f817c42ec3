package jsonequal

import "testing"

func TestJSONEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		// objects
		{`{}`, `{}`, true},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, true},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`{"a":1,"b":2}`, `{"a":1}`, false},
		{`{"a":1}`, `{"A":1}`, false},
		{`{"a":{"x":[1,{"y":null}]}}`, `{"a":{"x":[1,{"y":null}]}}`, true},
		{`{"a":{"x":1,"y":2}}`, `{"a":{"y":2,"x":1}}`, true},
		{`{"a":{"x":1}}`, `{"a":{"x":2}}`, false},
		{`{"a":1,"a":2}`, `{"a":2}`, true}, // last duplicate counts, as in Jackson's tree
		{`{ "a" : 1 }`, `{"a":1}`, true},
		// arrays
		{`{"a":[1,2]}`, `{"a":[1,2]}`, true},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`{"a":[1,2]}`, `{"a":[1,2,3]}`, false},
		{`{"a":[]}`, `{"a":{}}`, false},
		// strings
		{`{"s":"\u00e9"}`, `{"s":"é"}`, true},
		{`{"s":"\ud83d\ude42"}`, `{"s":"🙂"}`, true},
		{`{"s":"a\/b"}`, `{"s":"a/b"}`, true},
		{`{"s":"a"}`, `{"s":"A"}`, false},
		{`{"s":"1"}`, `{"s":1}`, false},
		// integers: exact at any size
		{`{"n":1}`, `{"n":1}`, true},
		{`{"n":1}`, `{"n":2}`, false},
		{`{"n":-0}`, `{"n":0}`, true},
		{`{"n":9223372036854775807}`, `{"n":9223372036854775807}`, true},
		{`{"n":9223372036854775807}`, `{"n":9223372036854775806}`, false},
		{`{"n":9223372036854775808}`, `{"n":9223372036854775807}`, false},
		{`{"n":123456789012345678901234567890}`, `{"n" : 123456789012345678901234567890}`, true},
		{`{"n":123456789012345678901234567890}`, `{"n":123456789012345678901234567891}`, false},
		{`{"n":-99999999999999999999}`, `{"n":-99999999999999999999}`, true},
		// integer never equals decimal
		{`{"n":1}`, `{"n":1.0}`, false},
		{`{"n":100}`, `{"n":1e2}`, false},
		{`{"n":1.0}`, `{"n":1}`, false},
		// decimals as float64
		{`{"n":1.0}`, `{"n":1.00}`, true},
		{`{"n":1e2}`, `{"n":100.0}`, true},
		{`{"n":1E2}`, `{"n":1e+2}`, true},
		{`{"n":0.1}`, `{"n":0.10000000000000001}`, true}, // same float64
		{`{"n":0.1}`, `{"n":0.2}`, false},
		{`{"n":2.5}`, `{"n":25e-1}`, true},
		{`{"n":0.0}`, `{"n":-0.0}`, false},   // Double.compare, as Jackson's DoubleNode.equals
		{`{"n":1e400}`, `{"n":2e400}`, true}, // both +Inf, as Double.parseDouble gives
		{`{"n":1e400}`, `{"n":-1e400}`, false},
		// literals
		{`{"v":true}`, `{"v":true}`, true},
		{`{"v":true}`, `{"v":false}`, false},
		{`{"v":null}`, `{"v":false}`, false},
		{`{"v":null}`, `{}`, false},
		{`{"v":null}`, `{"v":null}`, true},
		// invalid input never equals, not even itself
		{``, ``, false},
		{`{`, `{`, false},
		{`{"a":1}x`, `{"a":1}x`, false},
		{`{"a":1} {}`, `{"a":1}`, false},
		{`{"a":1}`, `{"a":1} {}`, false},
		{`{"a":01}`, `{"a":1}`, false},
		{`{"a":1}`, `not json`, false},
		{`{"a":NaN}`, `{"a":NaN}`, false},
		// top-level non-objects still compare (robustness)
		{`[1,2]`, `[1,2]`, true},
		{`"x"`, `"x"`, true},
		{` 1 `, `1`, true},
	} {
		if got := Equal([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("Equal(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := Equal([]byte(tc.b), []byte(tc.a)); got != tc.want {
			t.Errorf("Equal(%s, %s) = %v, want %v (symmetry)", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestJSONEqualDeepNestingDoesNotPanic(t *testing.T) {
	deep := make([]byte, 0, 40002)
	for i := 0; i < 20000; i++ {
		deep = append(deep, '[')
	}
	for i := 0; i < 20000; i++ {
		deep = append(deep, ']')
	}
	// The leading space makes the bytes differ, so both are parsed.
	if Equal(deep, append([]byte(" "), deep...)) {
		t.Error("jsonEqual of JSON nested beyond the decoder's limit = true, want false")
	}
}
