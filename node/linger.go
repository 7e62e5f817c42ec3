package node

import (
	"io"
	"net"
	"time"
)

// A TLS client whose certificate the REST port refuses learns why from the
// handshake's alert (certificate required, unknown CA), but only if the
// alert reaches it: with TLS 1.3 the client has already sent its request
// when the server checks its certificate, and a server that closes a
// socket holding unread bytes makes the kernel send a reset, which throws
// away the alert on the client's side (curl then says "getpeername()
// failed" or "connection reset" instead of naming the certificate). So a
// REST connection is closed as web servers do it: the writing half first,
// then whatever the client still sends is read and dropped for a moment,
// then the socket is closed.
const (
	lingerTime  = time.Second
	lingerBytes = 64 << 10
)

// lingerListener hands out connections that close the lingering way.
type lingerListener struct{ net.Listener }

func (l lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		return &lingerConn{TCPConn: tc}, nil
	}
	return c, nil
}

// lingerConn closes its writing half at once and the socket after at most
// lingerTime or lingerBytes read, in the background.
type lingerConn struct{ *net.TCPConn }

func (c *lingerConn) Close() error {
	if err := c.TCPConn.CloseWrite(); err != nil {
		return c.TCPConn.Close()
	}
	go func() {
		_ = c.TCPConn.SetReadDeadline(time.Now().Add(lingerTime))
		_, _ = io.CopyN(io.Discard, c.TCPConn, lingerBytes)
		_ = c.TCPConn.Close()
	}()
	return nil
}
