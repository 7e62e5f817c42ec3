package oql

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckBinds(t *testing.T) {
	for _, tc := range []struct {
		text string
		n    int
		ok   bool
	}{
		{"SELECT * FROM /r", 0, true},
		{"SELECT * FROM /r", 1, false},
		{"SELECT * FROM /r o WHERE o.a = $1", 1, true},
		{"SELECT * FROM /r o WHERE o.a = $1", 0, false},
		{"SELECT * FROM /r o WHERE o.a = $1", 2, false},
		// The highest $k counts, not how many distinct ones appear.
		{"SELECT * FROM /r o WHERE o.a = $3", 3, true},
		{"SELECT * FROM /r o WHERE o.a = $3", 1, false},
	} {
		q, err := Parse(tc.text)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.text, err)
		}
		err = q.CheckBinds(`query "q"`, tc.n)
		if (err == nil) != tc.ok {
			t.Errorf("%q with %d values: %v, want ok=%v", tc.text, tc.n, err, tc.ok)
			continue
		}
		if err != nil && (!errors.Is(err, ErrBind) || !strings.HasPrefix(strings.TrimPrefix(err.Error(), ErrBind.Error()+": "), `query "q" has `)) {
			t.Errorf("%q with %d values: %v, want an ErrBind naming the query", tc.text, tc.n, err)
		}
	}
}
