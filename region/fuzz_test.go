package region

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzNormalizeValue: the entry-body decoder never panics, and what it
// accepts is one compact JSON object within the depth limit that it
// accepts again unchanged, byte for byte what json.Compact makes of it.
func FuzzNormalizeValue(f *testing.F) {
	for _, s := range []string{`{}`, "{ \"a\" :\t[ 1 ,\n2 ]\r, \"b\\\" \" : \" x \\\\\" }", `{"a":1,"b":[1,2,{"c":null}],"d":"é\u00e9"}`, ` { "x" : 10.0 } `, `[1]`, `{"a":`, "{\"a\":\"\xff\"}", `{"a":{"a":{"a":{}}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := NormalizeValue(body)
		if err != nil {
			return
		}
		if !json.Valid(v) || v[0] != '{' {
			t.Fatalf("NormalizeValue(%q) = %q: not a JSON object", body, v)
		}
		if d := depth(v); d > MaxValueDepth {
			t.Fatalf("NormalizeValue(%q) accepted depth %d", body, d)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, bytes.TrimSpace(body)); err != nil || !bytes.Equal(want.Bytes(), v) {
			t.Fatalf("NormalizeValue(%q) = %q; json.Compact makes %q (%v)", body, v, want.Bytes(), err)
		}
		again, err := NormalizeValue(v)
		if err != nil || !bytes.Equal(again, v) {
			t.Fatalf("NormalizeValue is not idempotent on %q: %q, %v", v, again, err)
		}
	})
}
