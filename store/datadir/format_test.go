package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A new data dir has no format until the store records this build's; a
// dir of an older format (or none: written before the file existed) is
// readable and is upgraded by recording the current one.
func TestFormatRecordedAndRead(t *testing.T) {
	dir := t.TempDir()
	if v, used, err := CheckFormat(dir); err != nil || v != 0 || used {
		t.Fatalf("new dir: format %d, used %t, %v; want 0, false, nil", v, used, err)
	}
	if err := Claim(dir, "a"); err != nil {
		t.Fatal(err)
	}
	if v, used, err := CheckFormat(dir); err != nil || v != 0 || !used {
		t.Fatalf("claimed dir without a format: format %d, used %t, %v; want 0, true, nil", v, used, err)
	}
	if err := RecordFormat(dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, FormatFile))
	if err != nil || string(data) != "2\n" {
		t.Fatalf("format file = %q, %v; want \"2\\n\"", data, err)
	}
	if v, _, err := CheckFormat(dir); err != nil || v != Format {
		t.Fatalf("after recording: format %d, %v; want %d", v, err, Format)
	}

	old := t.TempDir()
	if err := os.WriteFile(filepath.Join(old, FormatFile), []byte("1\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if v, _, err := CheckFormat(old); err != nil || v != 1 {
		t.Fatalf("format-1 dir: %d, %v; want 1, nil", v, err)
	}
}

// A dir written by a newer kvnode is refused with a message that says so
// and that downgrade is not supported; its format file is left alone.
func TestNewerFormatRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FormatFile)
	if err := os.WriteFile(path, []byte("3\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	_, _, err := CheckFormat(dir)
	if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), "downgrade is not supported") ||
		!strings.Contains(err.Error(), "format 3") {
		t.Fatalf("format 3: %v; want ErrNewerFormat saying downgrade is not supported", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "3\n" {
		t.Fatalf("format file changed to %q", data)
	}
}

// A damaged format file is ErrDamaged naming the file, never a guess.
func TestDamagedFormatRefused(t *testing.T) {
	for _, content := range []string{"", "2", "two\n", "02\n", "0\n", "-1\n", "2\n\n"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FormatFile), []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		_, _, err := CheckFormat(dir)
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), FormatFile) {
			t.Errorf("format file %q: %v; want ErrDamaged naming the file", content, err)
		}
	}
}
