package transport

import (
	"log/slog"
	"net"
	"testing"
	"time"
)

func TestRaftAddrRoundTrip(t *testing.T) {
	for _, tc := range []struct{ addr, name string }{{"10.0.0.1:7070", "kvnode-0"}, {"[fe80::1]:7070", "a@b"}, {"", "ghost"}} {
		addr, name := SplitRaftAddr(JoinRaftAddr(tc.addr, tc.name))
		if addr != tc.addr || name != tc.name {
			t.Errorf("split(join(%q, %q)) = %q, %q", tc.addr, tc.name, addr, name)
		}
	}
	if addr, name := SplitRaftAddr("10.0.0.1:7070"); addr != "10.0.0.1:7070" || name != "" {
		t.Errorf("a plain address split into %q, %q", addr, name)
	}
}

// A Raft connection meant for another member is refused: the stale
// address of one member must never reach another's Raft.
func TestMuxRefusesConnectionForAnotherMember(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMux(ln, ln.Addr(), "kvnode-1", slog.New(slog.DiscardHandler))
	go m.Serve()
	defer m.Close()
	gl, err := m.GroupListener(3)
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := gl.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	layer := &RaftLayer{Listener: gl, Group: 3, Dialer: &Dialer{Net: &net.Dialer{}}}
	addr := ln.Addr().String()

	for _, tc := range []struct {
		to   string
		want bool
	}{{"kvnode-1", true}, {"kvnode-2", false}} {
		c, err := layer.Dial(JoinRaftAddr(addr, tc.to), time.Second)
		if err != nil {
			t.Fatalf("dial %s: %v", tc.to, err)
		}
		select {
		case got := <-accepted:
			_ = got.Close()
			if !tc.want {
				t.Errorf("a connection meant for %s reached kvnode-1's Raft", tc.to)
			}
		case <-time.After(time.Second):
			if tc.want {
				t.Errorf("a connection meant for %s did not reach it", tc.to)
			}
			// The refused connection is closed by the far end.
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := c.Read(make([]byte, 1)); err == nil {
				t.Errorf("the refused connection is still open")
			}
		}
		_ = c.Close()
	}
	if _, err := layer.Dial(JoinRaftAddr("", "ghost"), time.Second); err == nil {
		t.Errorf("dialing a member with no known address succeeded")
	}
}

// A Raft dial to a member that refuses connections (its process is being
// restarted) keeps trying for a while: a member back within that time is
// reached by the same dial, one that stays down fails after it, not at
// once (raft's replication backoff counts failed attempts).
func TestRaftDialWaitsForARestartingMember(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // the member is down
	layer := &RaftLayer{Group: 1, Dialer: &Dialer{Net: &net.Dialer{}}}

	start := time.Now()
	if _, err := layer.Dial(JoinRaftAddr(addr, "kvnode-1"), 5*time.Second); err == nil {
		t.Fatal("dialing a member that stays down succeeded")
	}
	if took := time.Since(start); took < refusedPatience-2*refusedRetry || took > refusedPatience+time.Second {
		t.Errorf("a dial to a member that stays down failed after %v, want about %v", took, refusedPatience)
	}

	// Back 150 ms into the dial.
	back := make(chan *Mux, 1)
	go func() {
		time.Sleep(150 * time.Millisecond)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			back <- nil
			return
		}
		m := NewMux(ln, ln.Addr(), "kvnode-1", slog.New(slog.DiscardHandler))
		go m.Serve()
		back <- m
	}()
	c, err := layer.Dial(JoinRaftAddr(addr, "kvnode-1"), 5*time.Second)
	m := <-back
	if m == nil {
		t.Skip("the port was taken meanwhile")
	}
	defer m.Close()
	if err != nil {
		t.Fatalf("dial to a member back within the patience: %v", err)
	}
	_ = c.Close()
}
