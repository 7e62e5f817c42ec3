package ports

import (
	"net"
	"strconv"
	"testing"
)

func TestStableAreFreeDistinctAndBelowTheEphemeralRange(t *testing.T) {
	lo := ephemeralStart()
	ps, err := Stable(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ps {
		if p >= lo || p < 1024 || seen[p] {
			t.Fatalf("ports %v: want 5 distinct in [1024, %d)", ps, lo)
		}
		seen[p] = true
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		ln.Close()
	}
	// An outgoing connection never lands on one: its local port is ephemeral.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := c.LocalAddr().(*net.TCPAddr).Port; p < lo {
		t.Fatalf("an outgoing connection got port %d, below the ephemeral range starting at %d", p, lo)
	}
}
