package function

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParseArgs: the function-argument decoder never panics, and the
// arguments it accepts survive the trip between members unchanged.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{``, `[{"@type":"int","@value":5}]`, `{"@type":"T","a":1,"b":"x"}`, `[{"@type":"double","@value":2.0}]`, `[[1]]`, `[{"@type":"T","a":{"b":1}}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		args, err := ParseArgs(body)
		if err != nil || len(args) == 0 {
			return
		}
		wire, err := json.Marshal(args)
		if err != nil {
			t.Fatalf("accepted arguments %q do not encode: %v", body, err)
		}
		var back []Arg
		if err := json.Unmarshal(wire, &back); err != nil || !reflect.DeepEqual(back, args) {
			t.Fatalf("round trip of %q through %s = %#v, %v; want %#v", body, wire, back, err, args)
		}
	})
}
