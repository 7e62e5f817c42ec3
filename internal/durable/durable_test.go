package durable

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const statePath = "/d/state"

// checkWrite is the promise of WriteFile: after a power cut the file holds
// its old content or the new one (only the new one once WriteFile
// returned), and reading it after the restart removes any leftover. A nil
// old means there was no file.
func checkWrite(old, new []byte) func(*crashDisk, bool) string {
	show := func(b []byte, exists bool) string {
		if !exists {
			return "absent"
		}
		return fmt.Sprintf("%q", b)
	}
	return func(after *crashDisk, completed bool) string {
		got, err := readFile(after, statePath)
		exists := true
		if errors.Is(err, fs.ErrNotExist) {
			exists, err = false, nil
		}
		if err != nil {
			return fmt.Sprintf("reading it after the restart: %v", err)
		}
		if _, ok := after.live[statePath+TempSuffix]; ok {
			return "reading it after the restart left the temporary file"
		}
		switch {
		case exists && bytes.Equal(got, new):
			return ""
		case completed:
			return fmt.Sprintf("the file is %s, want the new content %s: the write returned before it was on disk", show(got, exists), show(new, true))
		case exists == (old != nil) && bytes.Equal(got, old):
			return ""
		}
		return fmt.Sprintf("the file is %s, want the old content %s or the new %s", show(got, exists), show(old, old != nil), show(new, true))
	}
}

// writeScenarios are the disks a write may find: no file yet, a file, a
// file with a leftover of an earlier cut write.
var writeScenarios = []struct {
	name  string
	old   []byte
	setup func(*crashDisk)
}{
	{"first write", nil, func(d *crashDisk) { d.put("/d", true, nil) }},
	{"replace", []byte("node-a\n"), func(d *crashDisk) {
		d.put("/d", true, nil)
		d.put(statePath, false, []byte("node-a\n"))
	}},
	{"replace with a leftover temporary file", []byte("node-a\n"), func(d *crashDisk) {
		d.put("/d", true, nil)
		d.put(statePath, false, []byte("node-a\n"))
		d.put(statePath+TempSuffix, false, []byte("garbage"))
	}},
}

// TestWriteFileSurvivesPowerCuts cuts the power after every operation of
// WriteFile, and after it returned, and looks at every disk that may come
// back: the file holds the old or the new content, never an empty or
// partial one, the new one once WriteFile returned, and no leftover
// survives the next read.
func TestWriteFileSurvivesPowerCuts(t *testing.T) {
	newData := []byte("node-bb\n")
	for _, sc := range writeScenarios {
		t.Run(sc.name, func(t *testing.T) {
			problems := powerCuts(sc.setup, func(fsys fileSystem) error {
				return writeFile(fsys, statePath, newData, 0o640)
			}, checkWrite(sc.old, newData))
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// TestPowerCutsCatchUnsafeWrites shows that the crash disk tells a safe
// write from the unsafe ones, the write kvnode had before among them: each
// of these breaks the promise in some scenario.
func TestPowerCutsCatchUnsafeWrites(t *testing.T) {
	newData := []byte("node-bb\n")
	tmp := statePath + TempSuffix
	writeTmp := func(fsys fileSystem) (file, error) {
		f, err := fsys.create(tmp, 0o640)
		if err != nil {
			return nil, err
		}
		_, err = f.Write(newData)
		return f, err
	}
	for _, unsafe := range []struct {
		name  string
		write func(fileSystem) error
		shows string // a problem found must say this
	}{
		{"write the temporary file and rename it (kvnode before: os.WriteFile, os.Rename)", func(fsys fileSystem) error {
			f, err := writeTmp(fsys)
			if err != nil {
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			return fsys.rename(tmp, statePath)
		}, `the file is "", want`}, // the empty node-name file of issue 16
		{"fsync the file, not the directory", func(fsys fileSystem) error {
			f, err := writeTmp(fsys)
			if err != nil {
				return err
			}
			if err := f.Sync(); err != nil {
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			return fsys.rename(tmp, statePath)
		}, ""},
		{"fsync the directory before the rename", func(fsys fileSystem) error {
			f, err := writeTmp(fsys)
			if err != nil {
				return err
			}
			if err := f.Sync(); err != nil {
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			if err := syncDir(fsys, "/d"); err != nil {
				return err
			}
			return fsys.rename(tmp, statePath)
		}, ""},
		{"fsync the file after the rename", func(fsys fileSystem) error {
			f, err := writeTmp(fsys)
			if err != nil {
				return err
			}
			if err := fsys.rename(tmp, statePath); err != nil {
				return err
			}
			if err := f.Sync(); err != nil {
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			return syncDir(fsys, "/d")
		}, ""},
	} {
		t.Run(unsafe.name, func(t *testing.T) {
			var found []string
			for _, sc := range writeScenarios {
				found = append(found, powerCuts(sc.setup, unsafe.write, checkWrite(sc.old, newData))...)
			}
			if len(found) == 0 {
				t.Fatal("no power cut broke this unsafe write: the crash disk is too kind")
			}
			if unsafe.shows != "" && !slices.ContainsFunc(found, func(p string) bool { return strings.Contains(p, unsafe.shows) }) {
				t.Errorf("no problem found says %q; found %q", unsafe.shows, found)
			}
			t.Logf("%d ways to break it, e.g. %s", len(found), found[0])
		})
	}
}

// TestMkdirAllSurvivesPowerCuts: once MkdirAll returned, the directories
// are on disk; os.MkdirAll's are not.
func TestMkdirAllSurvivesPowerCuts(t *testing.T) {
	const want = "/d/a/b"
	setup := func(d *crashDisk) { d.put("/d", true, nil) }
	check := func(after *crashDisk, completed bool) string {
		if !completed {
			return ""
		}
		if ino, ok := after.live[want]; !ok || !after.inodes[ino].dir {
			return want + " is missing"
		}
		return ""
	}
	for _, p := range powerCuts(setup, func(fsys fileSystem) error { return mkdirAll(fsys, want, 0o750) }, check) {
		t.Error(p)
	}
	plain := func(fsys fileSystem) error {
		if err := fsys.mkdir("/d/a", 0o750); err != nil {
			return err
		}
		return fsys.mkdir(want, 0o750)
	}
	if len(powerCuts(setup, plain, check)) == 0 {
		t.Error("no power cut lost directories made without fsyncing their parents: the crash disk is too kind")
	}
}

// TestOnRealDisk: the same functions on the machine's file system.
func TestOnRealDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(dir, 0o750); err != nil {
		t.Fatalf("MkdirAll of an existing dir: %v", err)
	}
	path := filepath.Join(dir, "state")
	if _, err := ReadFile(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFile of a missing file = %v, want fs.ErrNotExist", err)
	}
	for _, content := range []string{"one\n", "two, longer\n", "3\n"} {
		if err := WriteFile(path, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("ReadFile = %q, %v; want %q", got, err, content)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode = %v (%v), want 0640", fi.Mode(), err)
	}
	// A leftover of a cut write is ignored and removed.
	if err := os.WriteFile(path+TempSuffix, []byte("gar"), 0o640); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(path); err != nil || string(got) != "3\n" {
		t.Fatalf("ReadFile with a leftover = %q, %v; want %q", got, err, "3\n")
	}
	if _, err := os.Stat(path + TempSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the leftover is still there: %v", err)
	}
	// Errors name the file.
	missing := filepath.Join(dir, "no-such-dir", "state")
	if err := WriteFile(missing, []byte("x"), 0o640); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("WriteFile into a missing dir = %v, want an error naming %s", err, missing)
	}
	if err := MkdirAll(filepath.Join(path, "sub"), 0o750); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("MkdirAll under a file = %v, want an error naming %s", err, path)
	}
}
