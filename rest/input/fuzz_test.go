package input

import (
	"errors"
	"testing"

	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
)

// FuzzBindArgs: the decoder of a named query's bind values never panics;
// a body it refuses is the client's mistake (400), and every value it
// accepts either binds or fails with oql.ErrBind (500), nothing else.
func FuzzBindArgs(f *testing.F) {
	for _, s := range []string{`[{"@type":"int","@value":2}]`, `{"@type":"String","@value":"x"}`, `[{"@type":"int","@value":{"a":1}}]`, `[5]`, `[{"@value":1}]`, `[{"@type":"double","@value":"1e400"}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		args, err := ParseBindArgs(body)
		if err != nil {
			if !errors.Is(err, region.ErrInvalid) {
				t.Fatalf("ParseBindArgs(%q) = %v, want a 400 error", body, err)
			}
			return
		}
		for _, a := range args {
			if _, err := oql.Bind(a.Type, a.Value); err != nil && !errors.Is(err, oql.ErrBind) {
				t.Fatalf("Bind(%q, %s) = %v, want nil or ErrBind", a.Type, a.Value, err)
			}
		}
	})
}
