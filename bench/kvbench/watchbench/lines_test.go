package watchbench

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestLineReader: etcd's messages one a line, LF or CRLF, one longer than
// the reader's buffer, and a last line without its end.
func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	stream := "{\"result\":{\"created\":true}}\n{\"a\":1}\r\n\n" + long + "\n{\"cut\""
	wants := []string{`{"result":{"created":true}}`, `{"a":1}`, "", long}
	for name, r := range map[string]io.Reader{"whole": strings.NewReader(stream), "byte by byte": iotest.OneByteReader(strings.NewReader(stream))} {
		lr := newLineReader(r)
		for i, w := range wants {
			line, err := lr.readLine()
			if err != nil || string(line) != w {
				t.Fatalf("%s: line %d: got %.80q, %v; want %.80q", name, i, line, err, w)
			}
		}
		if line, err := lr.readLine(); !errors.Is(err, io.EOF) || string(line) != `{"cut"` {
			t.Errorf("%s: the last line without its end: got %q, %v; want %q, EOF", name, line, err, `{"cut"`)
		}
	}
}
