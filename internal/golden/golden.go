package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Path is where golden file name lives: testdata/golden/name.
func Path(name string) string { return filepath.Join("testdata", "golden", name) }

// Check compares got with golden file name, or rewrites the file with got
// when update is set (go test -update).
func Check(t testing.TB, name string, got []byte, update bool) {
	t.Helper()
	path := Path(name)
	if update {
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

// Read returns golden file name.
func Read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(Path(name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
