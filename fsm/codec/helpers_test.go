package codec

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

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
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("encoding differs from %s, which pins the on-disk format:\ngot  %x\nwant %x", path, got, want)
	}
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
