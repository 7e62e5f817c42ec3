package watchbench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// maxLine bounds one line of etcd's watch stream: a message larger than
// this is not a benchmark's and ends the stream with an error rather than
// growing a buffer without bound.
const maxLine = 16 << 20

// lineReader reads the lines of etcd's watch stream (one JSON message a
// line), reusing its buffers: a watcher receives thousands of messages a
// second and should not allocate for each. (kvnode's streams are read by
// package client.)
type lineReader struct {
	r    *bufio.Reader
	line []byte // a line longer than the buffer, accumulated
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// readLine returns the next line without its end (LF, or CRLF), valid
// until the next call; at the end of the stream io.EOF, with the last
// line if it had no end.
func (s *lineReader) readLine() ([]byte, error) {
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
