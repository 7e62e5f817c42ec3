package transport

import (
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// A peer whose certificate was accepted is still not trusted to send well:
// a broken or hostile member may stop halfway through a message, or send it
// a byte at a time, and each such connection holds a goroutine and its
// buffers on the receiver for as long as it lasts. The receiving side of
// every internal connection therefore bounds how long a message may take,
// by a floor on its rate rather than a fixed time, so that a 100 MiB entry
// over a slow link still arrives: a message that has begun must go on
// arriving at MinRate, after a grace period. An idle connection (between
// messages) is not timed: hashicorp/raft keeps pooled and pipelined
// connections open between writes, and closing them would cost a failed
// replication round each time.
const (
	// MinRate is the slowest a message between members may arrive once it
	// has begun, in bytes per second, after StallGrace.
	MinRate = 256 << 10
	// StallGrace is how long any message may take before MinRate applies.
	StallGrace = 10 * time.Second
	// replyTimeout bounds one write of an answer: a peer that sends
	// requests but does not read the answers is cut off, not waited for.
	replyTimeout = 30 * time.Second
)

// pace is a rate floor: a message may take grace, and then as long as its
// bytes take at rate bytes per second.
type pace struct {
	grace time.Duration
	rate  int64
}

// defaultPace is StallGrace and MinRate.
func defaultPace() pace { return pace{grace: StallGrace, rate: MinRate} }

// deadline is when a message that began at start, and of which read bytes
// have arrived, must have gone on arriving.
func (p pace) deadline(start time.Time, read int64) time.Time {
	return start.Add(p.grace + time.Duration(read)*time.Second/time.Duration(p.rate))
}

// guardConn is the receiving side of a Raft connection. hashicorp/raft
// serves a connection in turns, reading one request whole and then writing
// its answer, so a write marks the end of a message: the next byte read
// starts a new one, and from then on reads must keep up with MinRate.
type guardConn struct {
	net.Conn
	pace pace

	mu      sync.Mutex
	inFrame bool
	start   time.Time
	read    int64
}

// Guard wraps the receiving side of a connection whose peer speaks in
// request-then-answer turns (a Raft connection) with the rate floor above.
func Guard(c net.Conn) net.Conn { return &guardConn{Conn: c, pace: defaultPace()} }

func (g *guardConn) Read(p []byte) (int, error) {
	g.mu.Lock()
	if g.inFrame {
		_ = g.Conn.SetReadDeadline(g.pace.deadline(g.start, g.read))
	} else {
		_ = g.Conn.SetReadDeadline(time.Time{})
	}
	g.mu.Unlock()
	n, err := g.Conn.Read(p)
	if n > 0 {
		g.mu.Lock()
		if !g.inFrame {
			g.inFrame, g.start, g.read = true, time.Now(), 0
		}
		g.read += int64(n)
		g.mu.Unlock()
	}
	return n, err
}

func (g *guardConn) Write(p []byte) (int, error) {
	g.mu.Lock()
	g.inFrame = false
	g.mu.Unlock()
	_ = g.Conn.SetWriteDeadline(time.Now().Add(replyTimeout))
	return g.Conn.Write(p)
}

// GuardBodies applies the rate floor to the bodies of the requests h
// serves (node-to-node RPC over HTTP): each body must arrive within
// StallGrace plus its declared length at MinRate (a body of unknown length
// within StallGrace plus MaxTimeout), or the connection is closed. Once the
// body is read the deadline is lifted again, as net/http reads ahead on
// the connection while the handler works and would take a timeout then
// for a broken connection, cancelling the request.
func GuardBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Body == nil || req.Body == http.NoBody {
			h.ServeHTTP(w, req)
			return
		}
		rc := http.NewResponseController(w)
		var dl time.Time
		if req.ContentLength >= 0 {
			dl = defaultPace().deadline(time.Now(), req.ContentLength)
		} else {
			dl = time.Now().Add(StallGrace + MaxTimeout)
		}
		_ = rc.SetReadDeadline(dl)
		req.Body = &liftingBody{ReadCloser: req.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		h.ServeHTTP(w, req)
	})
}

// liftingBody lifts the read deadline once its body has been read to the
// end.
type liftingBody struct {
	io.ReadCloser
	once sync.Once
	lift func()
}

func (b *liftingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		// Only at the end: after a timeout net/http reads on to discard
		// the rest of the body, which must stay bounded too.
		b.once.Do(b.lift)
	}
	return n, err
}
