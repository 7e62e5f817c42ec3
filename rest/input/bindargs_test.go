package input

import "testing"

// TestParseBindArgs: an array of {"@type","@value"} objects, one object,
// or nothing; the value keeps its bytes.
func TestParseBindArgs(t *testing.T) {
	args, err := ParseBindArgs([]byte(` [{"@type":"int","@value": 2 },{"@value":10.0,"@type":"double"}] `))
	checkErr(t, err, "")
	if len(args) != 2 || args[0].Type != "int" || string(args[0].Value) != "2" || args[1].Type != "double" || string(args[1].Value) != "10.0" {
		t.Errorf("args %+v", args)
	}
	args, err = ParseBindArgs([]byte(`{"@type":"String","@value":"x"}`))
	checkErr(t, err, "")
	if len(args) != 1 || string(args[0].Value) != `"x"` {
		t.Errorf("one object: %+v", args)
	}
	args, err = ParseBindArgs([]byte(" \n"))
	checkErr(t, err, "")
	if args != nil {
		t.Errorf("an empty body: %+v, want no arguments", args)
	}
	for body, want := range map[string]string{
		`5`:                                  `invalid request: the body must be a JSON array of {"@type","@value"} objects`,
		`[5]`:                                "invalid request: bind value 1 is not a JSON object",
		`[{"@value":1}]`:                     `invalid request: bind value 1 needs a string "@type"`,
		`[{"@type":"int","@value":[1]}]`:     `invalid request: bind value 1: "@value" must be a scalar, not an array or object`,
		`[{"@type":"int","@value":1,"x":2}]`: `invalid request: bind value 1 has an unknown member "x"`,
		`[{"@type":"int","@value":1},{"@type":2}]`: `invalid request: bind value 2 needs a string "@type"`,
	} {
		_, err := ParseBindArgs([]byte(body))
		checkErr(t, err, want)
	}
}
