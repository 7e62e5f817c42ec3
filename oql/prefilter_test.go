package oql

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// TestPrefilterAnswersAsWhere runs every query over the same entries twice:
// from a source that keeps stored text (the store: the prefilter decides
// what it can) and from one that does not (WHERE decides every row). The
// answers, errors included, must be the same, over values the prefilter
// decides and values it must leave to WHERE.
func TestPrefilterAnswersAsWhere(t *testing.T) {
	// Ordering comparisons of numbers with strings, booleans, arrays or
	// objects are errors; the values after the first line are the ones
	// every comparison of the queries below answers without one.
	comparable := []string{
		`{"p":1}`, `{"p":500}`, `{"p":500.0}`, `{"p":499.99}`, `{"p":-3}`, `{"p":1e3}`, `{"p":5E-1}`,
		`{"p":9223372036854775807}`, `{"p":9223372036854775808}`, `{"p":-0}`,
		`{"p":null}`, `{"q":1}`, `{}`, `[1,2]`, `"p"`, `12`,
		`{"\u0070":900}`, `{"x":"p","p":2}`, `{"p":3,"p":4000}`, `{"a":{"p":600},"p":7}`, `{"p" : 800 }`,
	}
	incomparable := []string{`{"p":"700"}`, `{"p":true}`, `{"p":[1]}`, `{"p":{"p":1}}`}
	source := func(values []string) *sliceSource {
		src := &sliceSource{path: "/r"}
		for i, v := range values {
			if !json.Valid([]byte(v)) {
				t.Fatalf("value %d is not JSON: %s", i, v)
			}
			src.keys = append(src.keys, fmt.Sprintf("k%03d", i))
			src.values = append(src.values, []byte(v))
		}
		return src
	}
	sources := map[string]*sliceSource{"numbers": source(comparable), "every kind": source(append(comparable, incomparable...))}
	queries := []struct {
		text      string
		params    []any
		prefilter bool // whether the query takes the prefilter
	}{
		{"SELECT COUNT(*) FROM /r o WHERE o.p > 500", nil, true},
		{"SELECT * FROM /r o WHERE o.p >= 500", nil, true},
		{"SELECT * FROM /r o WHERE o.p < 500L", nil, true},
		{"SELECT * FROM /r o WHERE o.p <= 499.99", nil, true},
		{"SELECT * FROM /r o WHERE o.p = 500", nil, true},
		{"SELECT * FROM /r o WHERE o.p <> 500", nil, true},
		{"SELECT * FROM /r o WHERE o.p != 1", nil, true},
		{"SELECT * FROM /r o WHERE 500 < o.p", nil, true},
		{"SELECT * FROM /r o WHERE NOT (o.p > 500)", nil, true},
		{"SELECT * FROM /r WHERE p > 2.5f", nil, true},
		{"SELECT o.p FROM /r o WHERE o.p > $1", []any{int64(2)}, true},
		{"SELECT o.p FROM /r o WHERE o.p > $1", []any{"a"}, true},
		{"SELECT o.p FROM /r o WHERE o.p = $1", []any{nil}, true},
		{"SELECT * FROM /r o WHERE o.p > 9223372036854775806L", nil, true},
		{"SELECT * FROM /r o WHERE o.p > 1 AND o.p < 5000", nil, false},
		{"SELECT * FROM /r o WHERE o.p = 'a'", nil, false},
		{"SELECT * FROM /r o WHERE o.a.p > 1", nil, false},
		{"SELECT * FROM /r.keySet k WHERE k > 'k010'", nil, false},
	}
	ctx := context.Background()
	for _, tc := range queries {
		q, err := Parse(tc.text)
		if err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		prog, err := q.compile()
		if err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		if got := prog.sel.prefilter != nil; got != tc.prefilter {
			t.Errorf("%s: prefilter %v, want %v", tc.text, got, tc.prefilter)
		}
		for name, src := range sources {
			want, wantErr := q.Execute(ctx, src, tc.params, Options{})
			got, gotErr := q.Execute(ctx, immutableSource{src}, tc.params, Options{})
			if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
				t.Errorf("%s %v over %s: error %v, WHERE alone: %v", tc.text, tc.params, name, gotErr, wantErr)
				continue
			}
			if wantErr != nil {
				if name == "numbers" && tc.params == nil {
					t.Errorf("%s over %s: %v", tc.text, name, wantErr)
				}
				continue
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			if string(gj) != string(wj) {
				t.Errorf("%s %v over %s:\n prefiltered %s\n WHERE alone %s", tc.text, tc.params, name, gj, wj)
			}
			if tc.text == "SELECT * FROM /r o WHERE o.p >= 500" {
				// That the comparison is one: the rows it keeps.
				want := `[{"p":500},{"p":500.0},{"p":1e3},{"p":9223372036854775807},{"p":9223372036854775808},{"\u0070":900},{"p":800}]`
				if string(gj) != want {
					t.Errorf("o.p >= 500 over %s kept %s, want %s", name, gj, want)
				}
			}
		}
	}
}
