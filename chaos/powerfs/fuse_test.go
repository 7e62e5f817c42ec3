//go:build chaos

package powerfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.etcd.io/bbolt"
)

// These tests mount the file system, so they need /dev/fuse and root (or
// fusermount3); they run with the chaos suite (build tag chaos).
//
// What reads the mount through mmap runs in a child process (this test
// binary again, see TestMain): a page fault on the mount blocks its thread
// outside any system call, and when the Go runtime then stops the world
// for a collection it waits for that thread forever while the FUSE server,
// in the same process, is stopped too.

const helperEnv = "POWERFS_TEST_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		if err := helper(h, os.Args[len(os.Args)-1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// inChild runs helper h on path in a child process and returns its output.
func inChild(t *testing.T, h, path string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", path)
	cmd.Env = append(os.Environ(), helperEnv+"="+h)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled()) {
		t.Fatalf("helper %s: %v\n%s", h, err, out)
	}
	return strings.TrimSpace(string(out))
}

func helper(h, path string) error {
	switch h {
	case "mmap-write":
		return mmapWrite(path)
	case "mmap-read":
		return mmapRead(path)
	case "bolt-write":
		return boltWrite(path)
	case "bolt-check":
		return boltCheck(path)
	}
	return fmt.Errorf("no helper %q", h)
}

// die ends the process the way the chaos suite ends a member: SIGKILL,
// nothing flushed or closed.
func die() error {
	return syscall.Kill(os.Getpid(), syscall.SIGKILL)
}

func mount(t *testing.T) (*FS, string) {
	t.Helper()
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := Mount(filepath.Join(dir, "disk"), mnt)
	if err != nil {
		t.Fatalf("mount: %v (the chaos suite needs FUSE: /dev/fuse and fusermount3)", err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return f, mnt
}

func powerCut(t *testing.T, f *FS) {
	t.Helper()
	st, err := f.Cut()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cut: %v", st)
}

func fsyncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatalf("fsync %s: %v", dir, err)
	}
}

func readOrNone(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMountWriteSyncWriteCut(t *testing.T) {
	f, mnt := mount(t)
	p := filepath.Join(mnt, "log")
	file, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fsyncDir(t, mnt)
	if _, err := file.WriteAt([]byte("synced"), 0); err != nil {
		t.Fatal(err)
	}
	if err := file.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := file.WriteAt([]byte("-and-not-synced"), 6); err != nil {
		t.Fatal(err)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readOrNone(t, p); got != "synced-and-not-synced" {
		t.Fatalf("before the cut: %q", got)
	}
	powerCut(t, f)
	if got := readOrNone(t, p); got != "synced" {
		t.Errorf("after the cut: got %q, want %q", got, "synced")
	}
}

func TestMountRenameWithoutDirSyncIsUndone(t *testing.T) {
	f, mnt := mount(t)
	state, tmp := filepath.Join(mnt, "state"), filepath.Join(mnt, "state.tmp")
	writeSynced := func(p, s string) {
		file, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		if _, err := file.WriteString(s); err != nil {
			t.Fatal(err)
		}
		if err := file.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	writeSynced(state, "old")
	fsyncDir(t, mnt)
	writeSynced(tmp, "new")
	if err := os.Rename(tmp, state); err != nil {
		t.Fatal(err)
	}
	powerCut(t, f)
	if got := readOrNone(t, state); got != "old" {
		t.Errorf("state after the cut: got %q, want %q", got, "old")
	}
	if got := readOrNone(t, tmp); got != "<none>" {
		t.Errorf("state.tmp after the cut: got %q, want none", got)
	}

	// The same with the directory synced: the rename holds.
	writeSynced(tmp, "new")
	if err := os.Rename(tmp, state); err != nil {
		t.Fatal(err)
	}
	fsyncDir(t, mnt)
	powerCut(t, f)
	if got := readOrNone(t, state); got != "new" {
		t.Errorf("state after the second cut: got %q, want %q", got, "new")
	}
}

// A reader through mmap (as bbolt reads) must not see pages the kernel
// cached before the cut.
func TestMountMmapSeesTheCut(t *testing.T) {
	f, mnt := mount(t)
	p := filepath.Join(mnt, "db")
	if out := inChild(t, "mmap-write", p); out != "" {
		t.Fatal(out)
	}
	powerCut(t, f)
	if got := inChild(t, "mmap-read", p); got != "durable" {
		t.Errorf("mmap after the cut: got %q, want %q", got, "durable")
	}
}

// mmapWrite writes and syncs a page, maps it, overwrites it without a
// sync and checks the mapping shows the overwrite; then dies.
func mmapWrite(p string) error {
	file, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	if err := syncParent(filepath.Dir(p)); err != nil {
		return err
	}
	page := make([]byte, 4096)
	copy(page, "durable")
	if _, err := file.WriteAt(page, 0); err != nil {
		return err
	}
	if err := file.Sync(); err != nil {
		return err
	}
	m, err := syscall.Mmap(int(file.Fd()), 0, 4096, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return err
	}
	if _, err := file.WriteAt([]byte("volatile"), 0); err != nil {
		return err
	}
	if got := string(m[:8]); got != "volatile" {
		return fmt.Errorf("mmap before the cut: got %q, want the last write", got)
	}
	return die()
}

func mmapRead(p string) error {
	file, err := os.Open(p)
	if err != nil {
		return err
	}
	m, err := syscall.Mmap(int(file.Fd()), 0, 4096, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return err
	}
	fmt.Print(strings.TrimRight(string(m[:8]), "\x00"))
	return nil
}

func syncParent(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

var boltOptions = &bbolt.Options{NoFreelistSync: true, FreelistType: bbolt.FreelistMapType}

// bbolt on the mount, used as raft-boltdb uses it: committed transactions
// survive a cut, transactions committed without fdatasync (NoSync) do
// not, and the file opens and checks clean.
func TestMountBolt(t *testing.T) {
	f, mnt := mount(t)
	dir := filepath.Join(mnt, "group")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fsyncDir(t, mnt)
	path := filepath.Join(dir, "raft.db")
	if out := inChild(t, "bolt-write", path); out != "" {
		t.Fatal(out)
	}
	powerCut(t, f)
	if got, want := inChild(t, "bolt-check", path), "300 entries 1..300"; got != want {
		t.Errorf("after the cut: %s, want %s (the synced ones)", got, want)
	}
}

func boltWrite(path string) error {
	db, err := bbolt.Open(path, 0o600, boltOptions)
	if err != nil {
		return err
	}
	if err := syncParent(filepath.Dir(path)); err != nil { // the new file's name, as a careful program does
		return err
	}
	put := func(from, to uint64) error {
		for i := from; i <= to; i++ {
			err := db.Update(func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte("logs"))
				if err != nil {
					return err
				}
				k := binary.BigEndian.AppendUint64(nil, i)
				return b.Put(k, make([]byte, 100+int(i%7)*300))
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := put(1, 300); err != nil {
		return err
	}
	db.NoSync = true
	if err := put(301, 400); err != nil {
		return err
	}
	// Deleting old entries reuses freed pages in place, the riskiest
	// unsynced write for a copy-on-write B+tree.
	if err := db.Update(func(tx *bbolt.Tx) error {
		c := tx.Bucket([]byte("logs")).Cursor()
		for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= 250; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := put(401, 450); err != nil {
		return err
	}
	return die()
}

func boltCheck(path string) error {
	db, err := bbolt.Open(path, 0o600, boltOptions)
	if err != nil {
		return fmt.Errorf("open after the cut: %w", err)
	}
	defer db.Close()
	return db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			return fmt.Errorf("bbolt check after the cut: %w", err)
		}
		b := tx.Bucket([]byte("logs"))
		if b == nil {
			return errors.New("bucket gone after the cut")
		}
		n, first, last := 0, uint64(0), uint64(0)
		err := b.ForEach(func(k, v []byte) error {
			i := binary.BigEndian.Uint64(k)
			if n == 0 {
				first = i
			}
			last = i
			n++
			return nil
		})
		fmt.Printf("%d entries %d..%d", n, first, last)
		return err
	})
}
