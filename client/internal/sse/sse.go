// Package sse reads Server-Sent Events as a browser's EventSource does,
// for package client's watch, and gives up a stream that goes idle: the
// standard library only.
package sse

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Event is one dispatched event of a Server-Sent Events stream.
type Event struct {
	Type string // the block's event field; "message" when it named none
	// Data is its data lines joined with "\n". It is the reader's buffer,
	// valid until the next call of Next: a watch reads up to a million
	// events a second (kvbench's watch workload) and copies only what it
	// keeps.
	Data []byte
	// ID is the last event ID when the event was dispatched: this block's
	// id, or an earlier block's when it had none.
	ID string
}

// Reader reads the events of one stream, as a browser's EventSource
// does (CRLF, LF or CR lines, comments, multi-line data, the last event ID
// that a block without data updates too). It is not safe for concurrent
// use; one goroutine reads a stream.
type Reader struct {
	sc      *bufio.Scanner
	started bool
	skipLF  bool // the last line ended with CR: a LF right after it belongs to it

	// The block being read, and the ID buffer, which counts only once a
	// block ends (an unfinished block at the end of the stream is lost).
	typ     string
	data    []byte // the block's data lines, each followed by "\n"
	hasData bool
	idBuf   string
	// types interns event types: a stream names a handful, and each
	// event would otherwise allocate its own copy.
	types map[string]string

	lastID string
	retry  time.Duration
}

// NewReader reads r, refusing lines longer than maxLine bytes (a data
// line holds a whole event's JSON, so maxLine bounds the largest value the
// caller accepts).
func NewReader(r io.Reader, maxLine int) *Reader {
	rd := &Reader{sc: bufio.NewScanner(r), types: map[string]string{}}
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
	// Two byte searches (vectorized) rather than one IndexAny: a line
	// ends at its first LF unless a CR comes before it.
	i := bytes.IndexByte(line, '\n')
	before := line
	if i >= 0 {
		before = line[:i]
	}
	if j := bytes.IndexByte(before, '\r'); j >= 0 {
		i = j
	}
	if i >= 0 {
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
		line := r.sc.Bytes()
		if !r.started {
			r.started = true
			line = bytes.TrimPrefix(line, []byte("\uFEFF"))
		}
		if len(line) == 0 {
			if ev, ok := r.dispatch(); ok {
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue // a comment
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found {
			value = bytes.TrimPrefix(value, []byte{' '})
		}
		switch string(field) {
		case "event":
			r.typ = r.intern(value)
		case "data":
			r.data = append(append(r.data, value...), '\n')
			r.hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 && string(value) != r.idBuf {
				r.idBuf = string(value)
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil && len(bytes.Trim(value, "0123456789")) == 0 {
				r.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	if err := r.sc.Err(); err != nil {
		return Event{}, fmt.Errorf("read the event stream: %w", err)
	}
	return Event{}, io.EOF
}

// intern is the event type named b, allocated once per stream and type
// (up to a bound, past which a stream of ever new types costs an
// allocation each).
func (r *Reader) intern(b []byte) string {
	if s, ok := r.types[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(r.types) < 64 {
		r.types[s] = s
	}
	return s
}

// dispatch ends a block: the ID buffer becomes the last event ID, and a
// block with data is an event.
func (r *Reader) dispatch() (Event, bool) {
	r.lastID = r.idBuf
	typ, data, hasData := r.typ, r.data, r.hasData
	r.typ, r.data, r.hasData = "", r.data[:0], false
	if !hasData {
		return Event{}, false
	}
	if typ == "" {
		typ = "message"
	}
	return Event{Type: typ, Data: data[:len(data)-1], ID: r.lastID}, true
}

// Idle is r with t pushed back by d whenever bytes come: when none come
// for d, t fires (and its function gives the stream up).
func Idle(r io.Reader, t *time.Timer, d time.Duration) io.Reader {
	return &idleReader{r: r, t: t, d: d}
}

type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.t.Reset(ir.d)
	}
	return n, err
}
