package codec

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzDecodeCommand: DecodeCommand never panics, whatever it accepts
// re-encodes to exactly the input bytes (the encoding is canonical), and
// CheckCommand, which guards the entrance of every Raft log, accepts exactly
// what DecodeCommand accepts, as DecodeCommandNoCopy does, with the same
// result.
func FuzzDecodeCommand(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.bin"))
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range files {
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
		op, cerr := CheckCommand(b)
		if (err == nil) != (cerr == nil) {
			t.Fatalf("DecodeCommand(%x): %v, but CheckCommand: %v", b, err, cerr)
		}
		if err != nil {
			return
		}
		if op != c.Op {
			t.Errorf("CheckCommand(%x) = %v, DecodeCommand's op is %v", b, op, c.Op)
		}
		if got := c.Encode(nil); !bytes.Equal(got, b) {
			t.Errorf("DecodeCommand(%x) = %+v, which re-encodes to %x", b, c, got)
		}
		if nc, err := DecodeCommandNoCopy(b); err != nil || !reflect.DeepEqual(nc, c) {
			t.Errorf("DecodeCommandNoCopy(%x) = %+v, %v; DecodeCommand gives %+v", b, nc, err, c)
		}
	})
}
