package sse

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// ev is an Event with its data copied out of the reader's buffer.
type ev struct{ Type, Data, ID string }

// readAll reads every event of stream, one byte per read when slow (so
// that every line ending is split across reads somewhere), and the last
// event ID at the end.
func readAll(t *testing.T, stream string, slow bool) ([]ev, string) {
	t.Helper()
	var in io.Reader = strings.NewReader(stream)
	if slow {
		in = iotest.OneByteReader(in)
	}
	r := NewReader(in, 1<<10)
	var events []ev
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return events, r.LastID()
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		events = append(events, ev{e.Type, string(e.Data), e.ID})
	}
}

func TestReader(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         []ev
		lastID       string
	}{
		{"one event", "event: create\nid: 0:5.1\ndata: {\"key\":\"1\"}\n\n",
			[]ev{{"create", `{"key":"1"}`, "0:5.1"}}, "0:5.1"},
		{"no event field is a message", "data: x\n\n", []ev{{"message", "x", ""}}, ""},
		{"multi-line data joined with LF", "data: a\ndata:b\ndata:  c\n\n", []ev{{"message", "a\nb\n c", ""}}, ""},
		{"empty data line", "data\ndata\n\n", []ev{{"message", "\n", ""}}, ""},
		{"CRLF", "event: update\r\nid: 7\r\ndata: v\r\n\r\n", []ev{{"update", "v", "7"}}, "7"},
		{"CR alone", "event: update\rid: 7\rdata: v\r\rdata: w\r\r", []ev{{"update", "v", "7"}, {"message", "w", "7"}}, "7"},
		{"comments are skipped", ": keep-alive\n:\ndata: x\n: inside\n\n", []ev{{"message", "x", ""}}, ""},
		{"id without data updates the last id only", "id: 1\ndata: a\n\n: keep-alive\nid: 2\n\nevent: x\n\ndata: b\n\n",
			[]ev{{"message", "a", "1"}, {"message", "b", "2"}}, "2"},
		{"an event type does not carry over", "event: x\n\ndata: y\n\n", []ev{{"message", "y", ""}}, ""},
		{"empty id resets it", "id: 1\ndata: a\n\nid\ndata: b\n\n", []ev{{"message", "a", "1"}, {"message", "b", ""}}, ""},
		{"id with NUL is ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n", []ev{{"message", "a", "1"}, {"message", "b", "1"}}, "1"},
		{"unknown fields ignored", "foo: bar\ndata: x\n\n", []ev{{"message", "x", ""}}, ""},
		{"BOM at the start", "\uFEFFdata: x\n\n", []ev{{"message", "x", ""}}, ""},
		{"unfinished block at the end is lost, its id too", "id: 1\ndata: a\n\nid: 2\ndata: b\n", []ev{{"message", "a", "1"}}, "1"},
		{"colon in value", "data: {\"a\":\"b:c\"}\n\n", []ev{{"message", `{"a":"b:c"}`, ""}}, ""},
	} {
		for _, slow := range []bool{false, true} {
			got, last := readAll(t, tc.stream, slow)
			if !reflect.DeepEqual(got, tc.want) || last != tc.lastID {
				t.Errorf("%s (byte by byte: %v): got %q, last id %q; want %q, last id %q", tc.name, slow, got, last, tc.want, tc.lastID)
			}
		}
	}
}

func TestRetry(t *testing.T) {
	r := NewReader(strings.NewReader("retry: 1500\nretry: x\nretry: -1\ndata: a\n\n"), 1<<10)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if got := r.Retry(); got != 1500*time.Millisecond {
		t.Errorf("Retry() = %v, want 1.5s (bad values ignored)", got)
	}
}

func TestLineTooLong(t *testing.T) {
	r := NewReader(strings.NewReader("data: "+strings.Repeat("x", 2000)+"\n\n"), 1<<10)
	if _, err := r.Next(); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("Next over a 2000-byte line with a 1 KiB limit: %v, want an error", err)
	}
}

// An event costs at most its id's string: the data is the reader's
// buffer and the type is interned.
func TestReaderAllocs(t *testing.T) {
	var stream strings.Builder
	for i := range 1200 {
		fmt.Fprintf(&stream, "event: update\nid: 0:%d.0\ndata: {\"key\":\"k%d\"}\n\n", i, i)
	}
	r := NewReader(strings.NewReader(stream.String()), 1<<10)
	for range 100 { // the buffers grow to their size
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Errorf("Next allocates %v times an event, want at most 1 (its id)", n)
	}
}
