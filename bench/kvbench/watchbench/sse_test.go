package watchbench

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestSSEReader: the blocks of a stream as the watch contract writes them
// (and as any SSE server may: CRLF, several data lines, unknown fields,
// comments), one after the other.
func TestSSEReader(t *testing.T) {
	stream := ": hello\n\n" +
		"event: ready\nid: 0:7.0\ndata: {\"type\":\"ready\",\"token\":\"0:7.0\"}\n\n" +
		": keep-alive\nid: 0:7.0\n\n" +
		"event: update\r\nid: 0:8.0\r\nretry: 100\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n" +
		"data\n\n" +
		"event: create\nid: 0:9.0\ndata: " + strings.Repeat("x", 100_000) + "\n\n" +
		"event: update\nid: 0:10.0\ndata: {\"cut\""
	type want struct{ name, id, data string }
	wants := []want{
		{"ready", "0:7.0", `{"type":"ready","token":"0:7.0"}`},
		{"", "0:7.0", ""}, // the keep-alive: a comment and the position
		{"update", "0:8.0", "{\"a\":\n1}"},
		{"", "", ""},
		{"create", "0:9.0", strings.Repeat("x", 100_000)},
	}
	// One byte at a time as well: a block split over reads reads the same.
	for name, r := range map[string]io.Reader{"whole": strings.NewReader(stream), "byte by byte": iotest.OneByteReader(strings.NewReader(stream))} {
		sr := newSSEReader(r)
		for i, w := range wants {
			ev, err := sr.next()
			if err != nil {
				t.Fatalf("%s: event %d: %v", name, i, err)
			}
			if got := (want{ev.name, ev.id, string(ev.data)}); got != w {
				t.Errorf("%s: event %d: got %.80q, want %.80q", name, i, got, w)
			}
		}
		if _, err := sr.next(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: a stream cut inside a block: got %v, want %v", name, err, io.ErrUnexpectedEOF)
		}
	}
	sr := newSSEReader(strings.NewReader("event: ready\n\n"))
	if ev, err := sr.next(); err != nil || ev.name != "ready" {
		t.Fatalf("got %q, %v; want the ready event", ev.name, err)
	}
	if _, err := sr.next(); err != io.EOF {
		t.Errorf("a stream closed between blocks: got %v, want %v", err, io.EOF)
	}
}
