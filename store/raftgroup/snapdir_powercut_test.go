//go:build chaos

package raftgroup

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/chaos/powerfs"
)

// A snapshot raft was told is done must survive a power cut: raft
// compacts its log right after. On a powerfs mount (needs FUSE, hence the
// chaos build tag), raft's own file snapshot store loses the snapshot's
// files, because it never fsyncs the snapshot's directory; the store
// kvnode opens keeps them.
func TestSnapshotSurvivesPowerCut(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap bool
		want int // snapshots listed after the cut
	}{
		{"raft's store", false, 0},
		{"kvnode's store", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mnt := filepath.Join(dir, "mnt")
			if err := os.Mkdir(mnt, 0o755); err != nil {
				t.Fatal(err)
			}
			fs, err := powerfs.Mount(filepath.Join(dir, "disk"), mnt)
			if err != nil {
				t.Fatal(err)
			}
			defer fs.Close()
			open := func() raft.SnapshotStore {
				t.Helper()
				var s raft.SnapshotStore
				var err error
				if tc.wrap {
					s, err = openSnapshots(mnt, hclog.NewNullLogger()) // what openGroup opens
				} else {
					s, err = raft.NewFileSnapshotStoreWithLogger(mnt, 2, hclog.NewNullLogger())
				}
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			store := open()
			if err := syncSnapshotDir(mnt); err != nil { // snapshots/ itself is durable
				t.Fatal(err)
			}
			sink, err := store.Create(raft.SnapshotVersionMax, 10, 2, raft.Configuration{}, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sink.Write([]byte("state at index 10")); err != nil {
				t.Fatal(err)
			}
			if err := sink.Close(); err != nil {
				t.Fatal(err)
			}
			st, err := fs.Cut()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("cut: %v", st)

			store = open()
			metas, err := store.List()
			if err != nil {
				t.Fatal(err)
			}
			if len(metas) != tc.want {
				t.Fatalf("after the cut: %d snapshots, want %d", len(metas), tc.want)
			}
			if tc.want == 0 {
				return
			}
			_, rc, err := store.Open(metas[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			data, err := io.ReadAll(rc)
			if err != nil {
				t.Fatal(err)
			}
			if metas[0].Index != 10 || string(data) != "state at index 10" {
				t.Errorf("after the cut: snapshot at %d holds %q, want index 10 and what was written", metas[0].Index, data)
			}
		})
	}
}
