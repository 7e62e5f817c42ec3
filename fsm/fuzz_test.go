package fsm

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecodeCommand: DecodeCommand never panics, and whatever it accepts
// re-encodes to exactly the input bytes (the encoding is canonical).
func FuzzDecodeCommand(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.bin"))
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range files {
		if strings.HasPrefix(filepath.Base(path), "snapshot") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{1, byte(OpDelete), 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCommand(b)
		if err != nil {
			return
		}
		if got := c.Encode(nil); !bytes.Equal(got, b) {
			t.Errorf("DecodeCommand(%x) = %+v, which re-encodes to %x", b, c, got)
		}
	})
}
