package fsm

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzRestore: a snapshot stream comes from another member (Raft's
// InstallSnapshot, or the snapshot RPC), so a broken or hostile one must
// not hurt the member restoring it: any stream is refused with an error or
// restores a state that persists and restores again to the same content.
func FuzzRestore(f *testing.F) {
	for _, name := range []string{"snapshot-v1.bin", "snapshot-v2.bin", "snapshot-v3.bin"} {
		b, err := os.ReadFile(filepath.Join("testdata", "golden", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		fm := New(Options{})
		if err := restore(fm, data); err != nil {
			return
		}
		again := New(Options{})
		if err := restore(again, persist(t, fm)); err != nil {
			t.Fatalf("a restored state does not restore from its own snapshot: %v", err)
		}
		if a, b := dump(t, fm), dump(t, again); a != b {
			t.Fatalf("restored twice:\n%s\nthen\n%s", a, b)
		}
	})
}
