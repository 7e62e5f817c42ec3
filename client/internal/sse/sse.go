// Package sse reads the Server-Sent Events format as a browser's
// EventSource does: CRLF, LF or CR line ends, comments, multi-line data,
// and the last event ID, which a block without data updates too. The
// client's watches read GET /kv/v1/watch with it.
package sse

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Event is one dispatched event of a stream.
type Event struct {
	Type string // the block's event field; "message" when it named none
	Data string // its data lines joined with "\n"
	// ID is the last event ID when the event was dispatched: this block's
	// id, or an earlier block's when it had none.
	ID string
}

// Reader reads the events of one stream. It is not safe for concurrent
// use; one goroutine reads a stream.
type Reader struct {
	sc      *bufio.Scanner
	started bool
	skipLF  bool // the last line ended with CR: a LF right after it belongs to it

	// The block being read, and the ID buffer, which counts only once a
	// block ends (an unfinished block at the end of the stream is lost).
	typ   string
	data  strings.Builder
	idBuf string

	lastID string
	retry  time.Duration
}

// NewReader reads r, refusing lines longer than maxLine bytes (a data
// line holds a whole event's JSON, so maxLine bounds the largest value the
// caller accepts).
func NewReader(r io.Reader, maxLine int) *Reader {
	rd := &Reader{sc: bufio.NewScanner(r)}
	rd.sc.Buffer(make([]byte, 0, min(maxLine, 64<<10)), maxLine)
	rd.sc.Split(rd.splitLine)
	return rd
}

// splitLine cuts the stream at CRLF, LF or CR. A CR ends its line at once
// rather than waiting to see whether a LF follows (the server may send
// nothing more for a while); the LF, when it comes, is skipped.
func (r *Reader) splitLine(data []byte, atEOF bool) (int, []byte, error) {
	skip := 0
	if r.skipLF && len(data) > 0 && data[0] == '\n' {
		skip = 1
	}
	line := data[skip:]
	if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
		r.skipLF = line[i] == '\r'
		return skip + i + 1, line[:i], nil
	}
	if atEOF && len(line) > 0 {
		r.skipLF = false
		return len(data), line, nil
	}
	if atEOF {
		return len(data), nil, nil
	}
	return 0, nil, nil
}

// LastID is the last event ID the stream set: what a client sends as
// Last-Event-ID when it reconnects. A block with an id and no data (a
// keep-alive) sets it too.
func (r *Reader) LastID() string { return r.lastID }

// Retry is the reconnection delay the server asked for with a retry
// field, 0 when it sent none.
func (r *Reader) Retry() time.Duration { return r.retry }

// Next reads up to the next event and returns it. At the end of the
// stream it returns io.EOF; a read error, or a line over the limit, is
// returned wrapped.
func (r *Reader) Next() (Event, error) {
	for r.sc.Scan() {
		line := r.sc.Text()
		if !r.started {
			r.started = true
			line = strings.TrimPrefix(line, "\uFEFF")
		}
		if line == "" {
			if ev, ok := r.dispatch(); ok {
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue // a comment
		}
		field, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "event":
			r.typ = value
		case "data":
			r.data.WriteString(value)
			r.data.WriteByte('\n')
		case "id":
			if !strings.ContainsRune(value, 0) {
				r.idBuf = value
			}
		case "retry":
			if ms, err := strconv.ParseUint(value, 10, 31); err == nil && strings.Trim(value, "0123456789") == "" {
				r.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	if err := r.sc.Err(); err != nil {
		return Event{}, fmt.Errorf("read the event stream: %w", err)
	}
	return Event{}, io.EOF
}

// dispatch ends a block: the ID buffer becomes the last event ID, and a
// block with data is an event.
func (r *Reader) dispatch() (Event, bool) {
	r.lastID = r.idBuf
	typ, data := r.typ, r.data.String()
	r.typ = ""
	r.data.Reset()
	if data == "" {
		return Event{}, false
	}
	if typ == "" {
		typ = "message"
	}
	return Event{Type: typ, Data: strings.TrimSuffix(data, "\n"), ID: r.lastID}, true
}
