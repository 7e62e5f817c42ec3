package store

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/store/datadir"
)

// openStore runs New on dir as node name, closing the store at the end of
// the test when it opens.
func openStore(t *testing.T, dir, name string) (*Store, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{
		NodeName:  name,
		DataDir:   dir,
		Listener:  ln,
		Advertise: ln.Addr().String(),
		Members:   newWorld(),
		Raft:      testRaft(),
		Logger:    testLogger(t, name),
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, nil
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantRefused checks that opening dir fails with datadir.ErrDamaged, naming
// file and saying what, and leaves file as it was.
func wantRefused(t *testing.T, dir, file, what string) {
	t.Helper()
	before, beforeErr := os.ReadFile(file)
	_, err := openStore(t, dir, "a")
	if !errors.Is(err, datadir.ErrDamaged) {
		t.Fatalf("New = %v, want datadir.ErrDamaged", err)
	}
	if !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), what) {
		t.Fatalf("New = %q, want an error naming %s and saying %q", err, file, what)
	}
	after, afterErr := os.ReadFile(file)
	if string(after) != string(before) || (beforeErr == nil) != (afterErr == nil) {
		t.Fatalf("%s was %q (%v) and is %q (%v) after the refusal, want it untouched", file, before, beforeErr, after, afterErr)
	}
}

// TestDamagedNodeName: a data dir whose node-name is empty, truncated,
// garbage, or missing beside Raft state is refused with an error that
// names the file, and the file is left as it was.
func TestDamagedNodeName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string // "" with missing: no file
		missing bool
		what    string
	}{
		{"empty", "", false, "is empty"},
		{"truncated", "a", false, "is truncated"},
		{"garbage", "\x00\x9f\xfe\x01\n", false, "does not hold a node name"},
		{"two lines", "a\nb\n", false, "does not hold a node name"},
		{"name with a space", "a b\n", false, "does not hold a node name"},
		{"missing beside Raft state", "", true, "is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, datadir.NodeNameFile)
			if tc.missing {
				if err := os.MkdirAll(filepath.Join(dir, datadir.RaftDir, "g0"), 0o750); err != nil {
					t.Fatal(err)
				}
			} else {
				writeTestFile(t, path, tc.content)
			}
			wantRefused(t, dir, path, tc.what)
		})
	}
}

// TestNodeNameLeftovers: a node-name.tmp left by a cut write is ignored and
// removed, on a new data dir (the node starts fresh) as on a claimed one.
func TestNodeNameLeftovers(t *testing.T) {
	t.Run("new data dir", func(t *testing.T) {
		dir := t.TempDir()
		tmp := filepath.Join(dir, datadir.NodeNameFile+".tmp")
		writeTestFile(t, tmp, "b\n")
		if _, err := openStore(t, dir, "a"); err != nil {
			t.Fatalf("New on a data dir with only %s: %v", tmp, err)
		}
		if got := readTestFile(t, filepath.Join(dir, datadir.NodeNameFile)); got != "a\n" {
			t.Fatalf("node-name = %q, want %q", got, "a\n")
		}
		if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s is still there (%v), want it removed", tmp, err)
		}
	})
	t.Run("claimed data dir", func(t *testing.T) {
		dir := t.TempDir()
		writeTestFile(t, filepath.Join(dir, datadir.NodeNameFile), "a\n")
		tmp := filepath.Join(dir, datadir.NodeNameFile+".tmp")
		writeTestFile(t, tmp, "")
		if _, err := openStore(t, dir, "a"); err != nil {
			t.Fatalf("New with a leftover %s: %v", tmp, err)
		}
		if got := readTestFile(t, filepath.Join(dir, datadir.NodeNameFile)); got != "a\n" {
			t.Fatalf("node-name = %q, want %q", got, "a\n")
		}
		if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s is still there (%v), want it removed", tmp, err)
		}
	})
}

// claimedDataDir is the data dir of node a after one start.
func claimedDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := openStore(t, dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDamagedGroupInfo: a partition group dir whose group.json is empty,
// truncated, not what it should be, or missing beside the group's Raft
// state is refused with an error that names the file, which is neither
// re-created nor ignored.
func TestDamagedGroupInfo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		missing bool
		what    string
	}{
		{"empty", "", false, "is empty"},
		{"truncated", `{"id":3,"parti`, false, "is not valid JSON"},
		{"garbage", "\x00\x00\x00\x00", false, "is not valid JSON"},
		{"another group's", `{"id":4,"partitions":4}`, false, "records group 4, not 3"},
		{"no partitions", `{"id":3}`, false, "records 0 partition groups"},
		{"too few partitions", `{"id":3,"partitions":2}`, false, "too few to have group 3"},
		{"missing beside Raft state", "", true, "is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := claimedDataDir(t)
			gdir := filepath.Join(dir, datadir.RaftDir, "g3")
			path := filepath.Join(gdir, datadir.GroupInfoFile)
			if tc.missing {
				writeTestFile(t, filepath.Join(gdir, "raft.db"), "")
			} else {
				writeTestFile(t, path, tc.content)
			}
			wantRefused(t, dir, path, tc.what)
		})
	}
}

// TestGroupDirLeftovers: what a crash leaves while a partition group is
// created (an empty dir, maybe with group.json.tmp) or deleted (a renamed
// dir) does not stop the start; the leftovers are removed, and the empty
// group is not opened until the partition table asks.
func TestGroupDirLeftovers(t *testing.T) {
	dir := claimedDataDir(t)
	gdir := filepath.Join(dir, datadir.RaftDir, "g3")
	writeTestFile(t, filepath.Join(gdir, datadir.GroupInfoFile+".tmp"), `{"id":3,"part`)
	dropped := filepath.Join(dir, datadir.RaftDir, "g2"+datadir.DroppedSuffix)
	writeTestFile(t, filepath.Join(dropped, "raft.db"), "old")
	s, err := openStore(t, dir, "a")
	if err != nil {
		t.Fatalf("New with the leftovers of cut creations and deletions: %v", err)
	}
	if g := s.groups.get(3); g != nil {
		t.Error("group 3, whose creation was cut short, was opened at start")
	}
	for _, gone := range []string{filepath.Join(gdir, datadir.GroupInfoFile+".tmp"), filepath.Join(gdir, datadir.GroupInfoFile), dropped} {
		if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v), want it absent", gone, err)
		}
	}
}

// TestDropPartitionDeletesItsDir: a dropped group's dir is renamed, then
// deleted: neither it nor the renamed one is left, and a later start finds
// nothing of the group.
func TestDropPartitionDeletesItsDir(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(t, dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.groups.openPartition(3, 4)
	if err != nil {
		t.Fatal(err)
	}
	gdir := s.groups.dir(3)
	if got := readTestFile(t, filepath.Join(gdir, datadir.GroupInfoFile)); got != `{"id":3,"partitions":4}` {
		t.Fatalf("group.json = %s, want {\"id\":3,\"partitions\":4}", got)
	}
	s.groups.drop(g)
	for _, gone := range []string{gdir, gdir + datadir.DroppedSuffix} {
		if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v) after the drop, want it deleted", gone, err)
		}
	}
}
