package codec

import (
	"encoding/json"
	"flag"
	"testing"

	goldenfile "github.com/kvnode/kvnode/internal/golden"

	"github.com/kvnode/kvnode/region"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// entries builds region entries from "k", `{...}`, "k2", `{...}`.
func entries(kv ...string) []region.Entry {
	out := make([]region.Entry, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, region.Entry{Key: kv[i], Value: json.RawMessage(kv[i+1])})
	}
	return out
}

// golden compares got with testdata/golden/name, or rewrites the file when
// the test runs with -update.
func golden(t *testing.T, name string, got []byte) { goldenfile.Check(t, name, got, *update) }

func readGolden(t *testing.T, name string) []byte { return goldenfile.Read(t, name) }
