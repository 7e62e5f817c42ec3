package netproxy

import (
	"bufio"
	"net"
	"net/netip"
	"testing"
	"time"
)

// netFixture: member 0 at 127.0.0.21 calls member 1 at 127.0.0.22, whose
// echo server sits behind the proxy.
type netFixture struct {
	t     *testing.T
	net   *Net
	proxy string
	udp   net.PacketConn // member 1's UDP port
}

func newNetFixture(t *testing.T) *netFixture {
	t.Helper()
	echo, err := net.Listen("tcp", "127.0.0.22:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	udp, err := net.ListenPacket("udp", echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	n := New([]netip.Addr{netip.MustParseAddr("127.0.0.21"), netip.MustParseAddr("127.0.0.22")})
	t.Cleanup(n.Close)
	proxy, err := n.Proxy(1, "127.0.0.22:0", echo.Addr().String(), true)
	if err != nil {
		t.Fatal(err)
	}
	return &netFixture{t: t, net: n, proxy: proxy, udp: udp}
}

// dial connects from member 0's IP.
func (f *netFixture) dial() (net.Conn, *bufio.Reader) {
	f.t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.21")}, Timeout: time.Second}
	c, err := d.Dial("tcp", f.proxy)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// roundTrip sends a line and waits up to wait for its echo.
func roundTrip(c net.Conn, r *bufio.Reader, line string, wait time.Duration) (string, error) {
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	got, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return got[:len(got)-1], nil
}

func TestProxyHealthyAndBlackhole(t *testing.T) {
	f := newNetFixture(t)
	c, r := f.dial()
	if got, err := roundTrip(c, r, "a", time.Second); err != nil || got != "a" {
		t.Fatalf("healthy: %q, %v", got, err)
	}
	// One way: member 1's answers are held, its requests are not.
	f.net.Set(1, 0, LinkState{Fault: Blackhole})
	if got, err := roundTrip(c, r, "b", 300*time.Millisecond); err == nil {
		t.Fatalf("blackholed 1→0: the echo %q came through", got)
	}
	f.net.Heal()
	// Healed: the held echo arrives, intact and in order.
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "b\n" {
		t.Fatalf("after heal: %q, %v", got, err)
	}
}

func TestProxyReset(t *testing.T) {
	f := newNetFixture(t)
	c, r := f.dial()
	if _, err := roundTrip(c, r, "a", time.Second); err != nil {
		t.Fatal(err)
	}
	f.net.Set(0, 1, LinkState{Fault: Reset})
	if _, err := roundTrip(c, r, "b", time.Second); err == nil {
		t.Fatal("reset: the open connection still works")
	}
	c2, r2 := f.dial()
	if _, err := roundTrip(c2, r2, "c", time.Second); err == nil {
		t.Fatal("reset: a new connection works")
	}
	f.net.Heal()
	c3, r3 := f.dial()
	if got, err := roundTrip(c3, r3, "d", time.Second); err != nil || got != "d" {
		t.Fatalf("healed: %q, %v", got, err)
	}
}

func TestProxyDelay(t *testing.T) {
	f := newNetFixture(t)
	c, r := f.dial()
	f.net.Set(0, 1, LinkState{Fault: Delay, Delay: 150 * time.Millisecond})
	start := time.Now()
	if _, err := roundTrip(c, r, "a", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("delayed link answered in %v", d)
	}
}

func TestProxyUDP(t *testing.T) {
	f := newNetFixture(t)
	src, err := net.ListenPacket("udp", "127.0.0.21:0")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, _ := net.ResolveUDPAddr("udp", f.proxy)
	recv := func() bool {
		_ = f.udp.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		buf := make([]byte, 16)
		_, _, err := f.udp.ReadFrom(buf)
		return err == nil
	}
	_, _ = src.WriteTo([]byte("ping"), dst)
	if !recv() {
		t.Fatal("healthy: packet lost")
	}
	f.net.Set(0, 1, LinkState{Fault: Blackhole})
	_, _ = src.WriteTo([]byte("ping"), dst)
	if recv() {
		t.Fatal("blackholed: packet delivered")
	}
	f.net.Heal()
	_, _ = src.WriteTo([]byte("ping"), dst)
	if !recv() {
		t.Fatal("healed: packet lost")
	}
}
