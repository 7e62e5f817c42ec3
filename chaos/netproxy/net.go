package netproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Fault is what happens to traffic on one direction of a link between two
// members.
type Fault uint8

const (
	// Healthy forwards at once.
	Healthy Fault = iota
	// Blackhole holds TCP bytes (the sender's writes back up until its
	// timeouts fire, as behind a silent firewall) and drops UDP packets.
	// When the link heals, held bytes flow on, as after TCP retransmits.
	Blackhole
	// Reset closes TCP connections on the link and refuses new ones (a
	// firewall that rejects); UDP packets are dropped.
	Reset
	// Delay forwards after LinkState.Delay.
	Delay
)

var faultNames = [...]string{"healthy", "blackhole", "reset", "delay"}

func (f Fault) String() string {
	if int(f) < len(faultNames) {
		return faultNames[f]
	}
	return fmt.Sprintf("fault(%d)", f)
}

// LinkState is the fault on one direction of a link.
type LinkState struct {
	Fault Fault
	Delay time.Duration
}

// link is a direction: traffic sent by member from to member to.
type link struct{ from, to int }

// Net is the network between members on 127.0.0.0/8: a proxy in front of
// every member's internal (TCP) and gossip (TCP and UDP) ports, which the
// members advertise instead of their own. Each member binds its own IP, and
// its outgoing connections leave from it, so a proxy knows which member is
// calling and applies that link's fault in each direction.
type Net struct {
	mu      sync.Mutex
	members map[netip.Addr]int // member IP → index
	faults  map[link]LinkState
	changed chan struct{} // closed and replaced when faults change
	conns   map[*proxyConn]struct{}
	proxies map[int][]*proxy // by the member they lead to
	closed  bool
}

// proxy is one listening proxy: TCP, and UDP on the same port.
type proxy struct {
	to     int
	addr   string
	target string
	udp    *net.UDPAddr // nil: TCP only
	ln     net.Listener
	pc     net.PacketConn
}

// New makes a healthy network; ips[i] is member i's IP.
func New(ips []netip.Addr) *Net {
	n := &Net{members: map[netip.Addr]int{}, faults: map[link]LinkState{}, changed: make(chan struct{}), conns: map[*proxyConn]struct{}{}, proxies: map[int][]*proxy{}}
	for i, ip := range ips {
		n.members[ip] = i
	}
	return n
}

// Set puts a fault on traffic from member from to member to (one
// direction). A Reset closes the link's open connections at once.
func (n *Net) Set(from, to int, s LinkState) {
	n.mu.Lock()
	if s.Fault == Healthy {
		delete(n.faults, link{from, to})
	} else {
		n.faults[link{from, to}] = s
	}
	var doomed []*proxyConn
	if s.Fault == Reset {
		for c := range n.conns {
			if (c.dialer == from && c.target == to) || (c.dialer == to && c.target == from) {
				doomed = append(doomed, c)
			}
		}
	}
	close(n.changed)
	n.changed = make(chan struct{})
	n.mu.Unlock()
	for _, c := range doomed {
		c.close()
	}
}

// Isolate cuts member i off from every other member in both directions.
func (n *Net) Isolate(i int, members int, f Fault) {
	for j := range members {
		if j != i {
			n.Set(i, j, LinkState{Fault: f})
			n.Set(j, i, LinkState{Fault: f})
		}
	}
}

// Heal makes every link healthy.
func (n *Net) Heal() {
	n.mu.Lock()
	n.faults = map[link]LinkState{}
	close(n.changed)
	n.changed = make(chan struct{})
	n.mu.Unlock()
}

// state is the fault from→to now, and a channel closed when it may change.
func (n *Net) state(from, to int) (LinkState, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.faults[link{from, to}], n.changed
}

// Proxy puts a proxy for member to's port target at listen (TCP and, with
// udp, UDP on the same port), and returns the address it listens on.
func (n *Net) Proxy(to int, listen, target string, udp bool) (string, error) {
	p := &proxy{to: to, addr: listen, target: target}
	if udp {
		tgt, err := net.ResolveUDPAddr("udp", target)
		if err != nil {
			return "", err
		}
		p.udp = tgt
	}
	if err := n.listen(p); err != nil {
		return "", err
	}
	n.mu.Lock()
	n.proxies[to] = append(n.proxies[to], p)
	n.mu.Unlock()
	return p.addr, nil
}

// listen opens p's sockets (on a port 0 address, it fixes p.addr) and
// serves them.
func (n *Net) listen(p *proxy) error {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("proxy for %s: %w", p.target, err)
	}
	p.addr = ln.Addr().String()
	if p.udp != nil {
		pc, err := net.ListenPacket("udp", p.addr)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("UDP proxy for %s: %w", p.target, err)
		}
		p.pc = pc
		go n.serveUDP(pc, p.to, p.udp)
	}
	p.ln = ln
	go n.serveTCP(ln, p.to, p.target)
	return nil
}

// Down closes member i's proxies, as its ports close when it dies: peers
// get connection refused, not a connection that hangs up, so they know
// nothing was sent.
func (n *Net) Down(i int) {
	n.mu.Lock()
	ps := n.proxies[i]
	var doomed []*proxyConn
	for c := range n.conns {
		if c.target == i {
			doomed = append(doomed, c)
		}
	}
	n.mu.Unlock()
	for _, p := range ps {
		if p.ln != nil {
			_ = p.ln.Close()
			p.ln = nil
		}
		if p.pc != nil {
			_ = p.pc.Close()
			p.pc = nil
		}
	}
	for _, c := range doomed {
		c.close()
	}
}

// Up opens member i's proxies again, on the same addresses.
func (n *Net) Up(i int) error {
	n.mu.Lock()
	ps := n.proxies[i]
	n.mu.Unlock()
	for _, p := range ps {
		if p.ln != nil {
			continue
		}
		var err error
		for try := 0; try < 50; try++ {
			if err = n.listen(p); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Close stops every proxy and closes every proxied connection.
func (n *Net) Close() {
	n.mu.Lock()
	n.closed = true
	conns := n.conns
	n.conns = map[*proxyConn]struct{}{}
	close(n.changed)
	n.changed = make(chan struct{})
	var members []int
	for i := range n.proxies {
		members = append(members, i)
	}
	n.mu.Unlock()
	for _, i := range members {
		n.Down(i)
	}
	for c := range conns {
		c.close()
	}
}

// memberOf names the member an address belongs to, or -1 for anyone else
// (a client, a test).
func (n *Net) memberOf(addr net.Addr) int {
	var ap netip.AddrPort
	switch a := addr.(type) {
	case *net.TCPAddr:
		ap = a.AddrPort()
	case *net.UDPAddr:
		ap = a.AddrPort()
	default:
		return -1
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if i, ok := n.members[ap.Addr().Unmap()]; ok {
		return i
	}
	return -1
}

// proxyConn is one proxied TCP connection: dialer called target.
type proxyConn struct {
	dialer, target int
	in, out        net.Conn
	once           sync.Once
	done           chan struct{}
}

func (c *proxyConn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.in.Close()
		_ = c.out.Close()
	})
}

func (n *Net) serveTCP(ln net.Listener, to int, target string) {
	for {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		go n.handleTCP(in, to, target)
	}
}

func (n *Net) handleTCP(in net.Conn, to int, target string) {
	from := n.memberOf(in.RemoteAddr())
	if s, _ := n.state(from, to); s.Fault == Reset {
		_ = in.Close()
		return
	}
	if s, _ := n.state(to, from); s.Fault == Reset {
		_ = in.Close()
		return
	}
	out, err := net.DialTimeout("tcp", target, 2*time.Second)
	if err != nil {
		_ = in.Close() // the member is down: so is its proxy
		return
	}
	c := &proxyConn{dialer: from, target: to, in: in, out: out, done: make(chan struct{})}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		c.close()
		return
	}
	n.conns[c] = struct{}{}
	n.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); n.pump(c, in, out, from, to) }()
	go func() { defer wg.Done(); n.pump(c, out, in, to, from) }()
	wg.Wait()
	c.close()
	n.mu.Lock()
	delete(n.conns, c)
	n.mu.Unlock()
}

// pump copies src to dst, bytes sent by member from to member to, obeying
// that direction's fault for every chunk. An end of stream is passed on as
// a half-close; anything else ends both directions.
func (n *Net) pump(c *proxyConn, src, dst net.Conn, from, to int) {
	buf := make([]byte, 32<<10)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			if !n.pass(c, from, to) {
				c.close()
				return
			}
			if _, werr := dst.Write(buf[:k]); werr != nil {
				c.close()
				return
			}
		}
		if err != nil {
			if tc, ok := dst.(*net.TCPConn); ok && errors.Is(err, io.EOF) {
				_ = tc.CloseWrite()
				return
			}
			c.close()
			return
		}
	}
}

// pass waits until a chunk from→to may go on: at once when healthy, after
// the delay when delayed, when healed when blackholed. It reports false
// when the connection must close instead.
func (n *Net) pass(c *proxyConn, from, to int) bool {
	for {
		s, changed := n.state(from, to)
		switch s.Fault {
		case Healthy:
			return true
		case Delay:
			select {
			case <-time.After(s.Delay):
				return true
			case <-c.done:
				return false
			}
		case Reset:
			return false
		case Blackhole:
			select {
			case <-changed:
			case <-c.done:
				return false
			}
		}
	}
}

// serveUDP forwards gossip packets to the member. Replies go to the
// sender's advertised address (memberlist puts it in its messages), which
// is the sender's own proxy; packets coming back from the member itself
// have no known destination and are dropped.
func (n *Net) serveUDP(pc net.PacketConn, to int, target *net.UDPAddr) {
	buf := make([]byte, 64<<10)
	for {
		k, addr, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		from := n.memberOf(addr)
		if from == to {
			continue
		}
		s, _ := n.state(from, to)
		pkt := append([]byte(nil), buf[:k]...)
		switch s.Fault {
		case Healthy:
			_, _ = pc.WriteTo(pkt, target)
		case Delay:
			time.AfterFunc(s.Delay, func() { _, _ = pc.WriteTo(pkt, target) })
		}
	}
}
