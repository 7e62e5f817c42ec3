package fsm

import (
	"strings"
	"testing"
)

// A snapshot of a version this build does not know is refused, and one a
// newer kvnode wrote says so (a member restarted on an older binary in
// the middle of a rolling upgrade): the state machine is left as it was.
func TestSnapshotOfNewerVersionRefused(t *testing.T) {
	good := readGolden(t, "snapshot-v2.bin")
	offset := len(snapshotMagic)
	for _, tc := range []struct {
		version byte
		want    string
	}{
		{snapshotVersion + 1, "written by a newer kvnode"},
		{0, "format version 0 is not supported"},
	} {
		b := append([]byte(nil), good...)
		b[offset] = tc.version
		f := New(Options{})
		before := dump(t, f)
		err := restore(f, b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("restore of version %d: %v, want an error saying %q", tc.version, err, tc.want)
		}
		if got := dump(t, f); got != before {
			t.Errorf("a refused snapshot of version %d changed the state:\n%s", tc.version, got)
		}
	}
}
