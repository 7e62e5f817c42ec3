package cluster

import (
	"fmt"
	"log"
	"net"
	"time"

	"github.com/hashicorp/memberlist"
)

// boundTransport is memberlist's own network transport, except that the
// TCP connections it opens (push-pull syncs, joins, fallback probes) leave
// from the bind IP. memberlist dials with the kernel's choice of source
// address, which on a multi-homed host can be an interface the cluster
// does not use; its UDP packets already leave from the bound socket. With
// both bound, whatever another member or a firewall sees of this member
// comes from the address it was told to use: the chaos tests rely on that
// to tell which member a connection comes from.
type boundTransport struct {
	*memberlist.NetTransport
	local *net.TCPAddr
}

// newBoundTransport listens on ip:port (TCP and UDP); port 0 picks a free
// port for both.
func newBoundTransport(ip net.IP, port int, logger *log.Logger) (*boundTransport, error) {
	cfg := &memberlist.NetTransportConfig{BindAddrs: []string{ip.String()}, BindPort: port, Logger: logger}
	nt, err := memberlist.NewNetTransport(cfg)
	// A free TCP port may be taken for UDP: try a few others, as memberlist
	// does for its own transport.
	for try := 0; err != nil && port == 0 && try < 10; try++ {
		nt, err = memberlist.NewNetTransport(cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("gossip transport on %s: %w", net.JoinHostPort(ip.String(), fmt.Sprint(port)), err)
	}
	return &boundTransport{NetTransport: nt, local: &net.TCPAddr{IP: ip}}, nil
}

// DialTimeout implements memberlist.Transport.
func (t *boundTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport.
func (t *boundTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout, LocalAddr: t.local}
	return d.Dial("tcp", a.Addr)
}
