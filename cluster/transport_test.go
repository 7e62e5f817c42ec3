package cluster

import (
	"net"
	"testing"
	"time"
)

// TestGossipLeavesFromTheBindIP: a node bound to 127.0.0.2 opens its TCP
// connections (here, the join's push-pull) from 127.0.0.2, not from the
// kernel's default 127.0.0.1, so whoever it talks to sees the address it
// was told to use.
func TestGossipLeavesFromTheBindIP(t *testing.T) {
	t.Parallel()
	seed, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer seed.Close()
	from := make(chan net.Addr, 1)
	go func() {
		conn, err := seed.Accept()
		if err != nil {
			return
		}
		from <- conn.RemoteAddr()
		conn.Close()
	}()
	newTestNode(t, Config{Name: "a", BindAddr: "127.0.0.2:0", Join: []string{seed.Addr().String()}})
	select {
	case addr := <-from:
		if ip := addr.(*net.TCPAddr).IP.String(); ip != "127.0.0.2" {
			t.Errorf("join came from %s, want 127.0.0.2", addr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the node never dialed its seed")
	}
}
