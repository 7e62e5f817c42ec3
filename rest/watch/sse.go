package watch

import (
	"bufio"
	"net/http"
	"time"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/jsonout"
)

// sseBuffer is the stream's write buffer: a batch larger than it goes out
// in several writes before the batch's flush.
const sseBuffer = 32 << 10

// sse writes a stream of Server-Sent Events: each block ends with an
// empty line, data is one line of JSON (stored values are compacted JSON,
// and keys and causes are JSON strings, so none holds a line break).
type sse struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	bw     *bufio.Writer
	keys   *jsonout.KeyWriter
	name   string // the watched region
	region []byte // its name as a JSON string
	// timeout is the write deadline put before every write (doc.go).
	timeout time.Duration
	started bool
	onStart func() // called when the stream begins
	// broken is the first failed write: the client is gone or stopped
	// reading.
	broken error
	// pending: bytes went to the connection since the last flush.
	pending bool
	// flushing: flush has just set the deadline for its writes.
	flushing bool
	// lastWrite is when the stream last sent something, for keep-alives.
	lastWrite time.Time
	// events counts the change events written since the last take.
	events int
}

func newSSE(w http.ResponseWriter, regionName string, timeout time.Duration, onStart func()) *sse {
	s := &sse{w: w, rc: http.NewResponseController(w), keys: jsonout.NewKeyWriter(), name: regionName, timeout: timeout, onStart: onStart}
	s.region, _ = jsonout.Marshal(regionName) // a string always encodes
	s.bw = bufio.NewWriterSize(deadlineWriter{s}, sseBuffer)
	return s
}

// deadlineWriter puts the write deadline on the connection before each
// write that reaches it.
type deadlineWriter struct{ s *sse }

func (d deadlineWriter) Write(p []byte) (int, error) {
	if !d.s.flushing {
		d.s.deadline()
	}
	d.s.pending = true
	n, err := d.s.w.Write(p)
	if err != nil && d.s.broken == nil {
		d.s.broken = err
	}
	return n, err
}

// deadline sets the next write's deadline. A writer without deadlines
// (a test's recorder) is written without one.
func (s *sse) deadline() {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
}

// start sends the status and headers, once. The server's read deadline is
// lifted: net/http would cancel the request's context when it passed.
func (s *sse) start() {
	if s.started {
		return
	}
	s.started = true
	_ = s.rc.SetReadDeadline(time.Time{})
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	s.w.WriteHeader(http.StatusOK)
	s.lastWrite = time.Now()
	s.onStart()
}

// event writes one change (or initial entry) as a block.
func (s *sse) event(e region.Event) error {
	s.start()
	s.events++
	w := s.bw
	w.WriteString("event: ")
	w.WriteString(string(e.Type))
	s.id(e.Token)
	w.WriteString("\ndata: {\"type\":\"")
	w.WriteString(string(e.Type))
	w.WriteString("\",\"region\":")
	w.Write(s.region)
	if e.Type != region.EventClear {
		w.WriteString(",\"key\":")
		if err := s.keys.Write(w, region.Entry{Key: e.Key}); err != nil {
			return err
		}
	}
	switch e.Type {
	case region.EventCreate, region.EventUpdate, region.EventInitial:
		w.WriteString(",\"value\":")
		if err := jsonout.WriteValue(w, region.Entry{Value: e.Value}); err != nil {
			return err
		}
	}
	_, err := w.WriteString("}\n\n")
	return err
}

// id writes an id line when there is a token.
func (s *sse) id(token string) {
	if token != "" {
		s.bw.WriteString("\nid: ")
		s.bw.WriteString(token)
	}
}

// ready says that the initial entries (if any) are sent and the client is
// live.
func (s *sse) ready(token string) error {
	s.start()
	s.bw.WriteString("event: ready")
	s.id(token)
	s.bw.WriteString("\ndata: {\"type\":\"ready\",\"region\":")
	s.bw.Write(s.region)
	s.bw.WriteString(",\"token\":")
	return s.doc(token, "}\n\n")
}

// keepAlive is a comment with the current token.
func (s *sse) keepAlive(token string) error {
	s.bw.WriteString(": keep-alive")
	s.id(token)
	_, err := s.bw.WriteString("\n\n")
	if err != nil {
		return err
	}
	return s.flush()
}

// fail writes the error event that ends a stream: why, and the token to
// resume from.
func (s *sse) fail(cause, token string) error {
	s.start()
	s.bw.WriteString("event: error")
	s.id(token)
	s.bw.WriteString("\ndata: {\"type\":\"error\",\"cause\":")
	s.doc(cause, ",\"token\":")
	if err := s.doc(token, "}\n\n"); err != nil {
		return err
	}
	return s.flush()
}

// end writes the end event: the watch is over for good.
func (s *sse) end(cause string) error {
	s.start()
	s.bw.WriteString("event: end\ndata: {\"type\":\"end\",\"cause\":")
	if err := s.doc(cause, "}\n\n"); err != nil {
		return err
	}
	return s.flush()
}

// doc writes str as a JSON string, then tail.
func (s *sse) doc(str, tail string) error {
	b, _ := jsonout.Marshal(str) // a string always encodes
	s.bw.Write(b)
	_, err := s.bw.WriteString(tail)
	return err
}

// flush sends what is buffered to the client, now; nothing when nothing
// was written.
func (s *sse) flush() error {
	if s.bw.Buffered() == 0 && !s.pending {
		return s.broken
	}
	// One deadline for the buffer's last write and the flush that follows
	// it at once: setting one costs a lock and a timer update, and a flush
	// is made for every batch of every watcher.
	s.deadline()
	s.flushing = true
	err := s.bw.Flush()
	s.flushing = false
	if err != nil {
		return err
	}
	if err := s.rc.Flush(); err != nil {
		if s.broken == nil {
			s.broken = err
		}
		return err
	}
	s.pending = false
	s.lastWrite = time.Now()
	return nil
}

// takeEvents returns how many change events were written since the last
// call.
func (s *sse) takeEvents() int {
	n := s.events
	s.events = 0
	return n
}
