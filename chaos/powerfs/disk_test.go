package powerfs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// The model's rules, driven through Disk without FUSE: what a program
// synced survives a cut, what it did not sync is gone.

func openDisk(t *testing.T) *Disk {
	t.Helper()
	d, err := OpenDisk(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func create(t *testing.T, d *Disk, rel string) *os.File {
	t.Helper()
	f, err := d.Create(rel, os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func write(t *testing.T, d *Disk, f *os.File, off int64, s string) {
	t.Helper()
	if _, err := d.WriteAt(f, []byte(s), off); err != nil {
		t.Fatal(err)
	}
}

func syncFile(t *testing.T, d *Disk, f *os.File) {
	t.Helper()
	if err := d.Sync(f, true); err != nil {
		t.Fatal(err)
	}
}

func syncDir(t *testing.T, d *Disk, rel string) {
	t.Helper()
	if err := d.SyncDir(rel); err != nil {
		t.Fatal(err)
	}
}

func cut(t *testing.T, d *Disk) CutStats {
	t.Helper()
	st, err := d.Cut()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cut: %v", st)
	return st
}

// content is the file rel after a cut, or "<none>".
func content(t *testing.T, d *Disk, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.Root(), rel))
	if errors.Is(err, fs.ErrNotExist) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func want(t *testing.T, d *Disk, rel, wantContent string) {
	t.Helper()
	if got := content(t, d, rel); got != wantContent {
		t.Errorf("%s after the cut: got %q, want %q", rel, got, wantContent)
	}
}

// tree lists every path under the root.
func tree(t *testing.T, d *Disk) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(d.Root(), func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != d.Root() {
			rel, _ := filepath.Rel(d.Root(), p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func limboEmpty(t *testing.T, d *Disk) {
	t.Helper()
	names, err := readNames(d.limbo)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) > 0 {
		t.Errorf("limbo holds %v, want nothing", names)
	}
}

func TestSyncedDataSurvivesUnsyncedIsLost(t *testing.T) {
	d := openDisk(t)
	f := create(t, d, "log")
	syncDir(t, d, "")
	write(t, d, f, 0, "hello world")
	syncFile(t, d, f)
	write(t, d, f, 6, "WORLD and more") // overwrites synced bytes and extends
	cut(t, d)
	want(t, d, "log", "hello world")
}

func TestNewFileNeverSyncedIsEmpty(t *testing.T) {
	d := openDisk(t)
	f := create(t, d, "a")
	write(t, d, f, 0, "data")
	syncDir(t, d, "") // the name is durable, the data is not
	cut(t, d)
	want(t, d, "a", "")
}

func TestTruncateAndExtendAreUndone(t *testing.T) {
	d := openDisk(t)
	f := create(t, d, "db")
	syncDir(t, d, "")
	write(t, d, f, 0, "0123456789")
	syncFile(t, d, f)
	if err := d.Truncate(f, "", 4); err != nil {
		t.Fatal(err)
	}
	if err := d.Truncate(f, "", 20); err != nil { // zeros where 4..9 were
		t.Fatal(err)
	}
	write(t, d, f, 2, "xy")
	if err := d.Truncate(nil, "db", 3); err != nil { // by path
		t.Fatal(err)
	}
	st := cut(t, d)
	want(t, d, "db", "0123456789")
	if st.Files != 1 {
		t.Errorf("cut rolled back %d files, want 1", st.Files)
	}
}

func TestOpenTruncIsUndone(t *testing.T) {
	d := openDisk(t)
	f := create(t, d, "state")
	syncDir(t, d, "")
	write(t, d, f, 0, "v1")
	syncFile(t, d, f)
	g, err := d.Open("state", os.O_WRONLY|os.O_TRUNC)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	write(t, d, g, 0, "v2 longer")
	cut(t, d)
	want(t, d, "state", "v1")
}

func TestCreateWithoutDirSyncIsUndone(t *testing.T) {
	d := openDisk(t)
	f := create(t, d, "a")
	write(t, d, f, 0, "data")
	syncFile(t, d, f) // the file's data, not its name
	create(t, d, "b") // never synced: nothing lost that was asked for
	st := cut(t, d)
	want(t, d, "a", "<none>")
	limboEmpty(t, d)
	if !equal(st.LostSynced, []string{"a"}) {
		t.Errorf("cut reports fsynced files lost %v, want [a]", st.LostSynced)
	}

	f = create(t, d, "a")
	syncFile(t, d, f)
	syncDir(t, d, "")
	if st := cut(t, d); len(st.LostSynced) > 0 {
		t.Errorf("cut reports fsynced files lost %v with the directory synced, want none", st.LostSynced)
	}
}

// The write-temporary-then-rename pattern without a directory fsync:
// after the cut the old file is back and the temporary is gone.
func TestRenameWithoutDirSyncIsUndone(t *testing.T) {
	d := openDisk(t)
	f := create(t, d, "state")
	write(t, d, f, 0, "old")
	syncFile(t, d, f)
	syncDir(t, d, "")
	tmp := create(t, d, "state.tmp")
	write(t, d, tmp, 0, "new")
	syncFile(t, d, tmp)
	if err := d.Rename("state.tmp", "state", 0); err != nil {
		t.Fatal(err)
	}
	if got := content(t, d, "state"); got != "new" {
		t.Fatalf("before the cut: state = %q", got)
	}
	st := cut(t, d)
	want(t, d, "state", "old")
	want(t, d, "state.tmp", "<none>")
	if len(st.Restored) != 1 || st.Restored[0] != "state" {
		t.Errorf("restored %v, want [state]", st.Restored)
	}
}

func TestRenameWithDirSyncSurvives(t *testing.T) {
	d := openDisk(t)
	f := create(t, d, "state")
	write(t, d, f, 0, "old")
	syncFile(t, d, f)
	syncDir(t, d, "")
	tmp := create(t, d, "state.tmp")
	write(t, d, tmp, 0, "new")
	syncFile(t, d, tmp)
	if err := d.Rename("state.tmp", "state", 0); err != nil {
		t.Fatal(err)
	}
	syncDir(t, d, "")
	limboEmpty(t, d) // the replaced file is not named by any durable directory
	cut(t, d)
	want(t, d, "state", "new")
	want(t, d, "state.tmp", "<none>")
}

func TestUnlinkWithoutDirSyncIsUndone(t *testing.T) {
	d := openDisk(t)
	f := create(t, d, "keep")
	write(t, d, f, 0, "synced")
	syncFile(t, d, f)
	syncDir(t, d, "")
	write(t, d, f, 6, " and not")
	if err := d.Unlink("keep"); err != nil {
		t.Fatal(err)
	}
	cut(t, d)
	want(t, d, "keep", "synced")

	// With the directory synced, the unlink is durable.
	if err := d.Unlink("keep"); err != nil {
		t.Fatal(err)
	}
	syncDir(t, d, "")
	limboEmpty(t, d)
	cut(t, d)
	want(t, d, "keep", "<none>")
}

func TestMkdirNeedsBothDirectoriesSynced(t *testing.T) {
	d := openDisk(t)
	if err := d.Mkdir("g", 0o755); err != nil {
		t.Fatal(err)
	}
	f := create(t, d, "g/f")
	write(t, d, f, 0, "x")
	syncFile(t, d, f)
	syncDir(t, d, "") // g is durable in the root, but g's entries are not
	cut(t, d)
	if got := tree(t, d); len(got) != 1 || got[0] != "g" {
		t.Errorf("tree after the cut: %v, want [g]", got)
	}

	f = create(t, d, "g/f")
	write(t, d, f, 0, "x")
	syncFile(t, d, f)
	syncDir(t, d, "g")
	cut(t, d)
	want(t, d, "g/f", "x")
}

// A mkdir whose parent was never synced takes everything under it along.
func TestUnsyncedDirectoryLosesItsSubtree(t *testing.T) {
	d := openDisk(t)
	if err := d.Mkdir("g", 0o755); err != nil {
		t.Fatal(err)
	}
	f := create(t, d, "g/f")
	write(t, d, f, 0, "x")
	syncFile(t, d, f)
	syncDir(t, d, "g")
	cut(t, d)
	if got := tree(t, d); len(got) != 0 {
		t.Errorf("tree after the cut: %v, want nothing", got)
	}
}

// hashicorp/raft's file snapshot store: write the snapshot's files into
// a temporary directory, fsync them, rename the directory, fsync the
// parent, then remove older snapshots. It never fsyncs the snapshot
// directory itself, so under this model the snapshot directory survives
// empty, and the removed older snapshot comes back, whole only if its own
// directory had been synced.
func TestDirectoryRenamedIntoPlace(t *testing.T) {
	d := openDisk(t)
	mk := func(dir string, syncIt bool) {
		if err := d.Mkdir(dir+".tmp", 0o755); err != nil {
			t.Fatal(err)
		}
		f := create(t, d, dir+".tmp/state.bin")
		write(t, d, f, 0, dir)
		syncFile(t, d, f)
		if syncIt {
			syncDir(t, d, dir+".tmp")
		}
		if err := d.Rename(dir+".tmp", dir, 0); err != nil {
			t.Fatal(err)
		}
		syncDir(t, d, "")
	}
	mk("s1", true)
	mk("s2", false)
	if err := d.Unlink("s1/state.bin"); err != nil {
		t.Fatal(err)
	}
	if err := d.Rmdir("s1"); err != nil {
		t.Fatal(err)
	}
	cut(t, d)
	want(t, d, "s1/state.bin", "s1")
	if got := tree(t, d); !equal(got, []string{"s1", "s1/state.bin", "s2"}) {
		t.Errorf("tree after the cut: %v, want [s1 s1/state.bin s2]", got)
	}
}

func TestRenameOverDirectory(t *testing.T) {
	d := openDisk(t)
	for _, dir := range []string{"a", "b"} {
		if err := d.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	syncDir(t, d, "")
	if err := d.Rename("a", "b", 0); err != nil {
		t.Fatal(err)
	}
	cut(t, d)
	if got := tree(t, d); !equal(got, []string{"a", "b"}) {
		t.Errorf("tree after the cut: %v, want [a b]", got)
	}
	// A file cannot replace a directory, nor a directory a non-empty one.
	f := create(t, d, "a/x")
	f.Close()
	if err := d.Rename("a/x", "b", 0); err == nil {
		t.Error("renamed a file over a directory")
	}
	if err := d.Rename("b", "a", 0); err == nil {
		t.Error("renamed a directory over a non-empty one")
	}
}

// A file renamed into another directory that alone was synced is kept
// under both names (the source directory still names it).
func TestCrossDirectoryRename(t *testing.T) {
	d := openDisk(t)
	for _, dir := range []string{"a", "b"} {
		if err := d.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f := create(t, d, "a/f")
	write(t, d, f, 0, "f")
	syncFile(t, d, f)
	syncDir(t, d, "a")
	syncDir(t, d, "b")
	syncDir(t, d, "")
	if err := d.Rename("a/f", "b/f", 0); err != nil {
		t.Fatal(err)
	}
	syncDir(t, d, "b")
	cut(t, d)
	want(t, d, "a/f", "f")
	want(t, d, "b/f", "f")

	// Synced on the source side only: lost.
	if err := d.Unlink("b/f"); err != nil {
		t.Fatal(err)
	}
	syncDir(t, d, "b")
	if err := d.Rename("a/f", "b/f", 0); err != nil {
		t.Fatal(err)
	}
	syncDir(t, d, "a")
	cut(t, d)
	want(t, d, "a/f", "<none>")
	want(t, d, "b/f", "<none>")
}

func TestWhatWasThereAtOpenIsDurable(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "files", "g"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "files", "g", "f"), []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDisk(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := d.Open("g/f", os.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	write(t, d, f, 0, "AFTER!!!")
	if err := d.Unlink("g/f"); err != nil {
		t.Fatal(err)
	}
	if err := d.Rmdir("g"); err != nil {
		t.Fatal(err)
	}
	cut(t, d)
	want(t, d, "g/f", "before")
}

// Many small overwrites of a synced file, as bbolt makes between its
// fdatasyncs: every synced byte comes back.
func TestOverlappingWrites(t *testing.T) {
	d := openDisk(t)
	f := create(t, d, "db")
	syncDir(t, d, "")
	orig := bytes.Repeat([]byte("abcdefghij"), 100)
	write(t, d, f, 0, string(orig))
	syncFile(t, d, f)
	for i, w := range []struct {
		off int64
		s   string
	}{{10, "XXXXX"}, {12, "YYYYYYYYYY"}, {0, "Z"}, {995, "0123456789"}, {300, "Q"}, {5, "WWWWWWWWWWWWWWW"}} {
		write(t, d, f, w.off, w.s)
		if i == 3 {
			if err := d.Truncate(f, "", 500); err != nil {
				t.Fatal(err)
			}
		}
	}
	cut(t, d)
	want(t, d, "db", string(orig))
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
