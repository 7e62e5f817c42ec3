package backup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOfflineRefusals: what restore and recover refuse before they read
// or write anything, and that they leave the dir as it was.
func TestOfflineRefusals(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.backup")
	if err := os.WriteFile(junk, []byte("not a backup at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	member := filepath.Join(dir, "member")
	if err := os.MkdirAll(member, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(member, "node-name"), []byte("a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "new")
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"restore: no name", func() error {
			_, err := Restore(RestoreOptions{From: junk, DataDir: target, InternalAddr: "h:1"})
			return err
		}, "--name"},
		{"restore: a name with a space", func() error {
			_, err := Restore(RestoreOptions{From: junk, DataDir: target, Name: "a b", InternalAddr: "h:1"})
			return err
		}, "without spaces"},
		{"restore: no address", func() error {
			_, err := Restore(RestoreOptions{From: junk, DataDir: target, Name: "a"})
			return err
		}, "--internal-addr"},
		{"restore: no file", func() error {
			_, err := Restore(RestoreOptions{From: filepath.Join(dir, "missing"), DataDir: target, Name: "a", InternalAddr: "h:1"})
			return err
		}, "no such file"},
		{"restore: not a backup", func() error {
			_, err := Restore(RestoreOptions{From: junk, DataDir: target, Name: "a", InternalAddr: "h:1"})
			return err
		}, "not a kvnode backup"},
		{"recover: not a member's dir", func() error {
			_, err := Recover(RecoverOptions{DataDir: target})
			return err
		}, "not a member's data dir"},
		{"recover: no control group", func() error {
			_, err := Recover(RecoverOptions{DataDir: member})
			return err
		}, "holds no control group"},
		{"recover: a dir of another format", func() error {
			older := filepath.Join(dir, "older")
			for _, d := range []string{filepath.Join(older, "raft", "g0")} {
				if err := os.MkdirAll(d, 0o750); err != nil {
					t.Fatal(err)
				}
			}
			for name, text := range map[string]string{"node-name": "a\n", "format": "1\n"} {
				if err := os.WriteFile(filepath.Join(older, name), []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Recover(RecoverOptions{DataDir: older})
			return err
		}, "start the member once with this build"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
			if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s exists after the refusal", target)
			}
			if entries, _ := os.ReadDir(member); len(entries) != 1 {
				t.Errorf("the member's dir changed: %v", entries)
			}
		})
	}
}
