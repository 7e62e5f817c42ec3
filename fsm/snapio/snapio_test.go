package snapio

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestRoundTrip: what a Writer writes a Reader reads back, and any cut or
// flipped byte is an error, never a silently different stream.
func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Raw("MAGIC")
	w.Byte(3)
	w.Uvarint(1 << 40)
	w.String("région")
	big := bytes.Repeat([]byte("v"), 3<<20+5)
	w.Bytes(big)
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	read := func(stream []byte) error {
		r := NewReader(bytes.NewReader(stream))
		if m, err := r.Read(5); err != nil || string(m) != "MAGIC" {
			return errors.Join(err, errors.New("magic"))
		}
		if b, err := r.ReadByte(); err != nil || b != 3 {
			return errors.Join(err, errors.New("byte"))
		}
		if v, err := r.Uvarint("v"); err != nil || v != 1<<40 {
			return errors.Join(err, errors.New("uvarint"))
		}
		if s, err := r.String("s"); err != nil || s != "région" {
			return errors.Join(err, errors.New("string"))
		}
		if b, err := r.Bytes("b"); err != nil || !bytes.Equal(b, big) {
			return errors.Join(err, errors.New("bytes"))
		}
		return r.Trailer()
	}
	stream := buf.Bytes()
	if err := read(stream); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	for _, cut := range []int{0, 3, 7, 20, len(stream) - 4, len(stream) - 1} {
		if err := read(stream[:cut]); err == nil {
			t.Errorf("a stream cut at %d of %d was read", cut, len(stream))
		}
	}
	for _, at := range []int{2, 8, len(stream) / 2, len(stream) - 2} {
		flipped := bytes.Clone(stream)
		flipped[at] ^= 0x40
		if err := read(flipped); err == nil {
			t.Errorf("a stream with byte %d flipped was read", at)
		}
	}
	if err := read(append(bytes.Clone(stream), 0)); err == nil || !strings.Contains(err.Error(), "trailing") {
		t.Errorf("trailing bytes: %v", err)
	}
	if _, err := NewReader(strings.NewReader("\x80\x80\x80\x80\x04abc")).Bytes("x"); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a length far beyond the stream: %v", err)
	}
}
