package node_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
	"github.com/miekg/dns"
)

// peerDNS is a DNS server for one name, like the headless service of a
// Kubernetes StatefulSet with publishNotReadyAddresses: it answers the
// name (under any search domain) with the IP of every member published so
// far, the asking member's own included.
type peerDNS struct {
	name string
	mu   sync.Mutex
	ips  []net.IP
	srv  *dns.Server
	addr string
}

func newPeerDNS(t *testing.T, name string) *peerDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &peerDNS{name: name, addr: pc.LocalAddr().String()}
	d.srv = &dns.Server{PacketConn: pc, Handler: d}
	go func() { _ = d.srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = d.srv.Shutdown() })
	return d
}

func (d *peerDNS) publish(ip string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ips = append(d.ips, net.ParseIP(ip))
}

// ServeDNS answers A queries for the name; AAAA with no records; anything
// else with NXDOMAIN.
func (d *peerDNS) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	q := req.Question[0]
	if first, _, _ := strings.Cut(q.Name, "."); first != d.name {
		m.Rcode = dns.RcodeNameError
		_ = w.WriteMsg(m)
		return
	}
	if q.Qtype == dns.TypeA {
		d.mu.Lock()
		for _, ip := range d.ips {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 0}, A: ip})
		}
		d.mu.Unlock()
	}
	_ = w.WriteMsg(m)
}

// resolver is a Go resolver that asks only this server.
func (d *peerDNS) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "udp", d.addr)
	}}
}

// commonPort finds a port free for TCP and UDP on every one of ips, as a
// StatefulSet's pods all use the same gossip port on their own IPs.
func commonPort(t *testing.T, ips []string) int {
	t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		ln, err := net.Listen("tcp", ips[0]+":0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		free := true
		for _, ip := range ips {
			addr := fmt.Sprintf("%s:%d", ip, port)
			l, err1 := net.Listen("tcp", addr)
			p, err2 := net.ListenPacket("udp", addr)
			if l != nil {
				_ = l.Close()
			}
			if p != nil {
				_ = p.Close()
			}
			if err1 != nil || err2 != nil {
				free = false
			}
		}
		if free {
			return port
		}
	}
	t.Fatal("no port free on every loopback address")
	return 0
}

// TestJoinThroughOneDNSName simulates a StatefulSet: members kvnode-0..2
// on their own IPs (127.0.0.1-3), each started with --join kvnode-peers,
// a name that resolves to every member published so far, itself included
// (publishNotReadyAddresses), and --bootstrap-expect 3. The pods appear
// one by one, as Kubernetes would publish them. They must form one cluster
// with one leader and three voters, and serve.
func TestJoinThroughOneDNSName(t *testing.T) {
	ips := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}
	for _, ip := range ips[1:] {
		l, err := net.Listen("tcp", ip+":0")
		if err != nil {
			t.Fatalf("this test needs the loopback network 127.0.0.0/8 (Linux has it): %v", err)
		}
		_ = l.Close()
	}
	peers := newPeerDNS(t, "kvnode-peers")
	port := commonPort(t, ips)
	ip := nodetest.New(t)
	ip.Resolver = peers.resolver()
	ip.Tune = func(name string, cfg *node.Config) {
		host := ips[slices.Index([]string{"kvnode-0", "kvnode-1", "kvnode-2"}, name)]
		cfg.HTTPAddr = host + ":0"
		cfg.InternalAddr = host + ":0"
		cfg.GossipAddr = fmt.Sprintf("%s:%d", host, port)
		cfg.Join = []string{fmt.Sprintf("kvnode-peers:%d", port)} // one name for all, as in deploy/k8s
	}
	for i, name := range []string{"kvnode-0", "kvnode-1", "kvnode-2"} {
		peers.publish(ips[i])
		ip.Start(name, 3)
		time.Sleep(300 * time.Millisecond)
	}
	leader := ip.Leader()
	waitfor.Cond(t, 20*time.Second, "three voters", func() bool {
		v := nodetest.View(t, leader)
		voters := 0
		for _, m := range v.Members {
			if m.Suffrage == "voter" {
				voters++
			}
		}
		return voters == 3 && len(v.Members) == 3
	})
	nodetest.MustCall(t, leader, "POST", "/management/v1/regions", `{"name":"orders","type":"REPLICATE"}`, 201)
	nodetest.MustCall(t, ip.Nodes["kvnode-2"], "PUT", "/kv/v1/orders/1", `{"total":1}`, 200)
	for name, n := range ip.Nodes {
		if r := nodetest.MustCall(t, n, "GET", "/kv/v1/orders/1", "", 200); r.Body != `{"total":1}` {
			t.Errorf("%s: GET orders/1 = %s", name, r.Body)
		}
	}
	// Every member is told about the others by gossip: /servers lists three.
	waitfor.Cond(t, 10*time.Second, "/servers to list three members", func() bool {
		r := nodetest.MustCall(t, ip.Nodes["kvnode-1"], "GET", "/kv/v1/servers", "", 200)
		return strings.Count(r.Body, "http://") == 3
	})
}
