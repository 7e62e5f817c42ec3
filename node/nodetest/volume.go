package nodetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// SecretVolume is a directory laid out as the kubelet lays out a mounted
// Secret: each key is a symlink through ..data to a file in a timestamped
// directory, and an update writes a new directory and renames a new
// ..data symlink over the old one (atomically), then removes the old
// directory. Tests of live reload update one to rotate files the way a
// cluster does.
type SecretVolume struct {
	t   *testing.T
	Dir string
	gen int
}

// NewSecretVolume is an empty volume in a temporary directory.
func NewSecretVolume(t *testing.T) *SecretVolume {
	return &SecretVolume{t: t, Dir: t.TempDir()}
}

// Path is where key's file appears in the volume.
func (v *SecretVolume) Path(key string) string { return filepath.Join(v.Dir, key) }

// Update makes files (key → contents) the volume's whole contents.
func (v *SecretVolume) Update(files map[string][]byte) {
	v.t.Helper()
	v.gen++
	ts := filepath.Join(v.Dir, fmt.Sprintf("..2026_11_25_00_00_%02d.%d", v.gen, v.gen))
	if err := os.Mkdir(ts, 0o755); err != nil {
		v.t.Fatal(err)
	}
	for key, b := range files {
		if err := os.WriteFile(filepath.Join(ts, key), b, 0o600); err != nil {
			v.t.Fatal(err)
		}
	}
	old, _ := os.Readlink(filepath.Join(v.Dir, "..data"))
	tmp := filepath.Join(v.Dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		v.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.Dir, "..data")); err != nil {
		v.t.Fatal(err)
	}
	for key := range files {
		link := v.Path(key)
		if _, err := os.Lstat(link); errors.Is(err, os.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", key), link); err != nil {
				v.t.Fatal(err)
			}
		}
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(v.Dir, old)); err != nil {
			v.t.Fatal(err)
		}
	}
}
