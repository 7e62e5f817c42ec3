package transport

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// The internal port carries every Raft group and the node-to-node RPC. Each
// connection starts with a short header that says where it goes:
//
//	magic 'k' | kind byte | uvarint group id (Raft kinds only)
//	          | uvarint length, member name (kindRaftTo only)
//
// The magic byte keeps stray clients (a curl, a port scanner) from being
// handed to Raft's decoder. kindRaftTo names the member the dialer means
// to reach, and a member refuses a connection meant for another: when
// containers or pods restart with shuffled IPs, an address that belonged
// to one member may now be another's, and hashicorp/raft cannot tell the
// two apart (a vote from the wrong member would count as the intended
// one's, twice over).
const (
	muxMagic      byte = 'k'
	kindRaft      byte = 'R'
	kindRaftTo    byte = 'T'
	kindRPC       byte = 'P'
	headerTimeout      = 5 * time.Second
	maxNameLen         = 1024
)

// Mux accepts connections on the internal port and hands each to the Raft
// transport of its group or to the RPC server.
type Mux struct {
	ln        net.Listener
	advertise net.Addr
	self      string // this member's name, checked against kindRaftTo
	logger    *slog.Logger

	mu     sync.Mutex
	groups map[uint64]*chanListener
	rpc    *chanListener
	closed bool
}

func NewMux(ln net.Listener, advertise net.Addr, self string, logger *slog.Logger) *Mux {
	m := &Mux{
		ln:        ln,
		advertise: advertise,
		self:      self,
		logger:    logger,
		groups:    make(map[uint64]*chanListener),
	}
	m.rpc = newChanListener(advertise, nil)
	return m
}

// Serve accepts until the listener is closed.
func (m *Mux) Serve() {
	for {
		conn, err := m.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			m.logger.Warn("internal port: accept failed", "error", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		go m.route(conn)
	}
}

// header is what a connection's first bytes say about it.
type header struct {
	kind  byte
	group uint64 // Raft kinds only
	to    string // kindRaftTo only
}

// append appends the header as the dialer sends it.
func (h header) append(b []byte) []byte {
	b = append(b, muxMagic, h.kind)
	if h.kind == kindRaft || h.kind == kindRaftTo {
		b = binary.AppendUvarint(b, h.group)
	}
	if h.kind == kindRaftTo {
		b = binary.AppendUvarint(b, uint64(len(h.to)))
		b = append(b, h.to...)
	}
	return b
}

// readHeader reads a connection's header, byte by byte so that nothing
// that belongs to the connection's new owner is consumed.
func readHeader(r byteReader) (header, error) {
	var h header
	magic, err := r.ReadByte()
	if err != nil {
		return h, err
	}
	if magic != muxMagic {
		return h, fmt.Errorf("bad magic byte %#x", magic)
	}
	if h.kind, err = r.ReadByte(); err != nil {
		return h, err
	}
	switch h.kind {
	case kindRPC:
		return h, nil
	case kindRaft, kindRaftTo:
		if h.group, err = binary.ReadUvarint(r); err != nil {
			return h, err
		}
		if h.kind == kindRaftTo {
			h.to, err = readName(r)
		}
		return h, err
	default:
		return h, fmt.Errorf("unknown connection kind %#x", h.kind)
	}
}

// route reads the header and hands conn over, or closes it.
func (m *Mux) route(conn net.Conn) {
	_ = conn.SetReadDeadline(time.Now().Add(headerTimeout))
	h, err := readHeader(byteReader{conn})
	var target *chanListener
	switch {
	case err != nil:
	case h.kind == kindRPC:
		target = m.rpc
	case h.kind == kindRaftTo && h.to != m.self:
		err = fmt.Errorf("raft group %d: connection meant for member %q, but this is %q (the dialer has a stale address)", h.group, h.to, m.self)
	default:
		m.mu.Lock()
		target = m.groups[h.group]
		m.mu.Unlock()
		if target == nil {
			err = fmt.Errorf("raft group %d is not hosted here", h.group)
		}
		// hashicorp/raft reads a connection without a deadline.
		conn = Guard(conn)
	}
	if err != nil {
		m.logger.Debug("internal port: dropping connection", "remote", conn.RemoteAddr().String(), "error", err)
		_ = conn.Close()
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	if !target.deliver(conn) {
		_ = conn.Close()
	}
}

// GroupListener registers the listener for a Raft group's incoming
// connections. It is removed again when closed.
func (m *Mux) GroupListener(gid uint64) (net.Listener, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, net.ErrClosed
	}
	if _, ok := m.groups[gid]; ok {
		return nil, fmt.Errorf("raft group %d already has a listener", gid)
	}
	l := newChanListener(m.advertise, func() {
		m.mu.Lock()
		delete(m.groups, gid)
		m.mu.Unlock()
	})
	m.groups[gid] = l
	return l, nil
}

// RPCListener is the listener of node-to-node RPC connections, for an
// http.Server.
func (m *Mux) RPCListener() net.Listener { return m.rpc }

// Close closes the internal port and every listener the mux feeds.
func (m *Mux) Close() error {
	m.mu.Lock()
	m.closed = true
	groups := make([]*chanListener, 0, len(m.groups))
	for _, l := range m.groups {
		groups = append(groups, l)
	}
	m.mu.Unlock()
	err := m.ln.Close()
	for _, l := range groups {
		_ = l.Close()
	}
	_ = m.rpc.Close()
	return err
}

// Dialer opens connections to other nodes' internal ports: TCP, then TLS
// when the cluster uses mutual TLS on the internal port.
type Dialer struct {
	Net *net.Dialer
	TLS *tls.Config // nil: plain TCP
}

// SourceAddr is where connections to other members leave from: the
// internal port's IP when it listens on a specific one (so peers and
// firewalls see the address the cluster was told to use, and on a
// multi-homed host traffic stays on the cluster's interface), else the
// kernel's choice (nil).
func SourceAddr(ln net.Listener) net.Addr {
	tcp, ok := ln.Addr().(*net.TCPAddr)
	if !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		return nil
	}
	return &net.TCPAddr{IP: tcp.IP}
}

// readName reads kindRaftTo's length-prefixed member name.
func readName(r byteReader) (string, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return "", err
	}
	if n == 0 || n > maxNameLen {
		return "", fmt.Errorf("member name of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.r, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// dial opens a connection to another node's internal port and writes the
// header that routes it to kind (and group gid, and for kindRaftTo the
// member name to).
func (d *Dialer) dial(ctx context.Context, addr string, kind byte, gid uint64, to string) (net.Conn, error) {
	conn, err := d.Net.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if d.TLS != nil {
		tc := tls.Client(conn, d.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("%w with %s: %w", ErrHandshake, addr, err)
		}
		conn = tc
	}
	hdr := header{kind: kind, group: gid, to: to}.append(nil)
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetWriteDeadline(dl)
	}
	if _, err := conn.Write(hdr); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("write connection header to %s: %w", addr, err)
	}
	_ = conn.SetWriteDeadline(time.Time{})
	return conn, nil
}

// byteReader reads one byte at a time so that routing never consumes bytes
// that belong to the connection's new owner.
type byteReader struct{ r io.Reader }

func (b byteReader) ReadByte() (byte, error) {
	var p [1]byte
	_, err := io.ReadFull(b.r, p[:])
	return p[0], err
}

// chanListener is a net.Listener fed by the mux.
type chanListener struct {
	addr    net.Addr
	conns   chan net.Conn
	done    chan struct{}
	once    sync.Once
	onClose func()
}

func newChanListener(addr net.Addr, onClose func()) *chanListener {
	return &chanListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{}), onClose: onClose}
}

// deliver hands conn to Accept; false when the listener is closed.
func (l *chanListener) deliver(conn net.Conn) bool {
	select {
	case l.conns <- conn:
		return true
	case <-l.done:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		if l.onClose != nil {
			l.onClose()
		}
	})
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// RaftLayer is the raft.StreamLayer of one group: it accepts the group's
// connections from the mux and dials peers with the group's header.
type RaftLayer struct {
	net.Listener
	// Group is the Raft group whose connections these are.
	Group  uint64
	Dialer *Dialer
}

// Dial implements raft.StreamLayer. An address made by JoinRaftAddr names
// the member it is meant for (see kindRaftTo); a plain host:port does not.
func (l *RaftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	addr, to := SplitRaftAddr(address)
	if addr == "" {
		return nil, fmt.Errorf("raft group %d: no address known for member %q (gossip has not heard of it)", l.Group, to)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	kind := kindRaftTo
	if to == "" {
		kind = kindRaft
	}
	// A refused connection is a member whose process is not running, most
	// often one being restarted. hashicorp/raft backs off its replication
	// to a follower by failed attempt (10 ms doubling up to 10 s, never
	// shortened when the follower comes back), and refusals come back at
	// once, so a member down for 1.5 s under write load came back to a
	// leader that sent it nothing for another second: until then it could
	// not catch up and held every request sent to it. Keep knocking for a
	// while instead: failures then mount at a few per second, and a member
	// that comes back meanwhile is reached at once.
	patience := time.Now().Add(min(refusedPatience, timeout))
	for {
		conn, err := l.Dialer.dial(ctx, addr, kind, l.Group, to)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().Add(refusedRetry).After(patience) {
			return conn, err
		}
		select {
		case <-time.After(refusedRetry):
		case <-ctx.Done():
			return nil, err
		}
	}
}

// refusedPatience bounds how long RaftLayer.Dial keeps dialing a member
// that refuses connections, every refusedRetry.
const (
	refusedPatience = 500 * time.Millisecond
	refusedRetry    = 50 * time.Millisecond
)

// DialRPC opens a connection to the RPC server on another node's internal
// port.
func (d *Dialer) DialRPC(ctx context.Context, addr string) (net.Conn, error) {
	return d.dial(ctx, addr, kindRPC, 0, "")
}

// JoinRaftAddr makes the address a RaftLayer dials: host:port@name. A host
// or IP never holds '@', so the first one separates the two.
func JoinRaftAddr(addr, name string) raft.ServerAddress {
	return raft.ServerAddress(addr + "@" + name)
}

// SplitRaftAddr undoes JoinRaftAddr; a plain host:port has no name.
func SplitRaftAddr(a raft.ServerAddress) (addr, name string) {
	addr, name, _ = strings.Cut(string(a), "@")
	return addr, name
}
