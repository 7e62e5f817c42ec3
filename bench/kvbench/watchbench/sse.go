package watchbench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// sseEvent is one block of a text/event-stream: the fields this client
// uses. A block that is only comments (the keep-alive) has an empty name
// and no data but may carry an id.
type sseEvent struct {
	name string // the `event:` field; "" means the default, "message"
	id   string
	data []byte // the `data:` lines joined by '\n'; valid until the next event
}

// maxLine bounds one line of the stream: a value larger than this is not
// a benchmark's and ends the stream with an error rather than growing a
// buffer without bound.
const maxLine = 16 << 20

// sseReader reads the blocks of a stream, reusing its buffers: a watcher
// receives thousands of events a second and should not allocate for each.
type sseReader struct {
	r    *bufio.Reader
	line []byte // a line longer than the buffer, accumulated
	ev   sseEvent
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next block with a field in it (comment-only blocks
// without an id are skipped), or io.EOF at the end of the stream. A
// stream cut in the middle of a block drops the block, as a browser's
// EventSource does.
func (s *sseReader) next() (sseEvent, error) {
	s.ev = sseEvent{data: s.ev.data[:0]}
	fields, dataLines := 0, 0
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if fields > 0 {
				return s.ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(name) {
		case "event":
			s.ev.name = string(value)
		case "id":
			s.ev.id = string(value)
		case "data":
			if dataLines > 0 {
				s.ev.data = append(s.ev.data, '\n')
			}
			s.ev.data = append(s.ev.data, value...)
			dataLines++
		default:
			continue // retry: and unknown fields are ignored, as EventSource does
		}
		fields++
	}
}

// readLine returns the next line without its end (LF, CRLF or CR before
// LF), valid until the next call.
func (s *sseReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.line = append(s.line[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(s.line) > maxLine {
				return nil, fmt.Errorf("a line of the stream is longer than %d bytes", maxLine)
			}
			line, err = s.r.ReadSlice('\n')
			s.line = append(s.line, line...)
		}
		line = s.line
	}
	if err != nil {
		return line, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}
