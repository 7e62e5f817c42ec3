package durable

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// TempSuffix names the temporary file of a write: "<name>.tmp" beside
// "<name>". Callers that list a directory skip such names.
const TempSuffix = ".tmp"

// WriteFile replaces the content of the file at path with data, creating
// it with perm if needed: after a crash or power cut at any moment, the
// file holds its old complete content (or is absent, if it was) or data;
// once WriteFile returns nil, it holds data. path's directory must exist
// (and be durable: see MkdirAll).
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return writeFile(osFS{}, path, data, perm)
}

// ReadFile returns the content of the file at path, which WriteFile
// wrote, after removing the temporary file that a write cut short may have
// left beside it. A missing file is an error that is fs.ErrNotExist for
// errors.Is. ReadFile must not run while a WriteFile of the same path does.
func ReadFile(path string) ([]byte, error) {
	return readFile(osFS{}, path)
}

// MkdirAll creates dir and any missing parents, as os.MkdirAll does, and
// fsyncs the parent of every directory it creates, so that they and what
// is then written in them are still there after a power cut.
func MkdirAll(dir string, perm fs.FileMode) error {
	return mkdirAll(osFS{}, dir, perm)
}

// SyncDir fsyncs a directory: the entries created, renamed or removed in it
// so far are on disk when it returns nil. Files that other code (a
// database, a snapshot store) creates in a directory need it to be found
// again after a power cut.
func SyncDir(dir string) error {
	return syncDir(osFS{}, dir)
}

// fileSystem is what the package does to the disk, so that tests can run
// it on a disk that loses, at a power cut, what was not synced.
type fileSystem interface {
	// create opens name for writing, creating it with perm or truncating it.
	create(name string, perm fs.FileMode) (file, error)
	// openDir opens a directory, to sync it.
	openDir(name string) (file, error)
	rename(from, to string) error
	remove(name string) error
	readFile(name string) ([]byte, error)
	mkdir(name string, perm fs.FileMode) error
	// isDir stats name: fs.ErrNotExist when absent.
	isDir(name string) (bool, error)
}

type file interface {
	io.Writer
	Sync() error
	Close() error
}

// osFS is the real disk.
type osFS struct{}

func (osFS) create(name string, perm fs.FileMode) (file, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
}

func (osFS) openDir(name string) (file, error) { return os.Open(name) }

func (osFS) rename(from, to string) error { return os.Rename(from, to) }

func (osFS) remove(name string) error { return os.Remove(name) }

func (osFS) readFile(name string) ([]byte, error) { return os.ReadFile(name) }

func (osFS) mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }

func (osFS) isDir(name string) (bool, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return false, err
	}
	return fi.IsDir(), nil
}

// writeFile: the data is on disk (fsync) before the rename can be, and the
// rename is on disk (fsync of the directory) before writeFile returns.
func writeFile(fsys fileSystem, path string, data []byte, perm fs.FileMode) (err error) {
	tmp := path + TempSuffix
	f, err := fsys.create(tmp, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			// Best effort: a leftover is harmless, ReadFile removes it.
			_ = fsys.remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: fsync %s: %w", path, tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: close %s: %w", path, tmp, err)
	}
	if err := fsys.rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := syncDir(fsys, filepath.Dir(path)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func readFile(fsys fileSystem, path string) ([]byte, error) {
	tmp := path + TempSuffix
	if err := fsys.remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove %s, left by a write that a crash cut short: %w", tmp, err)
	}
	return fsys.readFile(path)
}

func mkdirAll(fsys fileSystem, dir string, perm fs.FileMode) error {
	dir = filepath.Clean(dir)
	isDir, err := fsys.isDir(dir)
	switch {
	case err == nil && isDir:
		return nil
	case err == nil:
		return fmt.Errorf("create directory %s: a file of that name is in the way", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirAll(fsys, parent, perm); err != nil {
			return err
		}
	}
	if err := fsys.mkdir(dir, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	return syncDir(fsys, parent)
}

func syncDir(fsys fileSystem, dir string) error {
	d, err := fsys.openDir(dir)
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
