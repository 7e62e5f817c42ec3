package cluster

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSeed(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"10.0.0.5:7000", "10.0.0.5:7000"},
		{"10.0.0.5", "10.0.0.5:7946"},
		{" kvnode-0.kvnode:7946 ", "kvnode-0.kvnode:7946"},
		{"kvnode-0.kvnode", "kvnode-0.kvnode:7946"},
		{"localhost:1", "localhost:1"},
		{"::1", "[::1]:7946"},
		{"[::1]", "[::1]:7946"},
		{"[fe80::1]:7000", "[fe80::1]:7000"},
		{"::ffff:10.0.0.5", "10.0.0.5:7946"},
	}
	for _, tt := range tests {
		s, err := parseSeed(tt.in)
		if err != nil {
			t.Errorf("parseSeed(%q): got error %v, want %s", tt.in, err, tt.want)
			continue
		}
		if got := s.String(); got != tt.want {
			t.Errorf("parseSeed(%q): got %s, want %s", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{"", "  ", ":7946", "host:0", "host:65536", "host:http", "[::1", "a:b:c:d"} {
		if s, err := parseSeed(bad); err == nil {
			t.Errorf("parseSeed(%q): got %s, want error", bad, s)
		}
	}
}

func TestJoinTargets(t *testing.T) {
	ap := netip.MustParseAddrPort
	resolved := []netip.AddrPort{
		ap("10.0.0.3:7946"),
		ap("10.0.0.1:7946"),          // self
		ap("[::ffff:10.0.0.2]:7946"), // alive, IPv4-mapped as some resolvers return it
		ap("10.0.0.3:7946"),          // duplicate
		ap("10.0.0.4:7946"),
	}
	self := map[netip.AddrPort]bool{ap("10.0.0.1:7946"): true}
	alive := map[netip.AddrPort]bool{ap("10.0.0.1:7946"): true, ap("10.0.0.2:7946"): true}
	got := joinTargets(resolved, self, alive)
	if want := []string{"10.0.0.3:7946", "10.0.0.4:7946"}; !reflect.DeepEqual(got, want) {
		t.Errorf("joinTargets: got %v, want %v", got, want)
	}
}

// TestSelfAddrsIncludesBoundAddress: a node finds its own address in a seed
// list even when it bound port 0.
func TestSelfAddrsIncludesBoundAddress(t *testing.T) {
	c := newTestNode(t, Config{Name: "a"})
	self := c.selfAddrs()
	want := netip.MustParseAddrPort(c.LocalAddr())
	if !self[want] {
		t.Errorf("selfAddrs: got %v, want it to contain %s", self, want)
	}
}

// TestRetryJoinUntilSeedStarts: B starts with a seed that does not exist
// yet, keeps trying, and joins once A comes up there.
func TestRetryJoinUntilSeedStarts(t *testing.T) {
	t.Parallel()
	addrA := "127.0.0.1:" + freePort(t)
	b, logsB := newTestNodeLogs(t, Config{Name: "b", Join: []string{addrA}, RetryInterval: 50 * time.Millisecond})

	eventually(t, 10*time.Second, func() string {
		if !strings.Contains(logsB.String(), "join failed") {
			return "B logged no failed join attempt yet"
		}
		return ""
	})
	if got := names(b.Alive()); !reflect.DeepEqual(got, []string{"b"}) {
		t.Fatalf("B's alive members before A exists: got %v, want [b]", got)
	}

	a := newTestNode(t, Config{Name: "a", BindAddr: addrA})
	for _, c := range []*Cluster{a, b} {
		waitAlive(t, c, "a", "b")
	}
}

// TestResolveSeeds: IP seeds pass through, names resolve to every address,
// and a name that does not resolve is reported without hiding the rest.
func TestResolveSeeds(t *testing.T) {
	seeds := []seed{{host: "10.0.0.9", port: 7000}, {host: "localhost", port: 7001}, {host: "does-not-exist.invalid", port: 7946}}
	got, err := resolveSeeds(t.Context(), nil, seeds)
	if err == nil || !strings.Contains(err.Error(), "does-not-exist.invalid") {
		t.Errorf("error: got %v, want one naming does-not-exist.invalid", err)
	}
	want := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.9:7000"), netip.MustParseAddrPort("127.0.0.1:7001")}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("resolved: got %v, want it to contain %s", got, w)
		}
	}
}
