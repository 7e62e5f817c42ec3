package store

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

// TestDialsLeaveFromTheInternalIP: a store whose internal port listens on
// 127.0.0.2 connects to other members from 127.0.0.2, so they (and the
// chaos tests' link proxies) see which member a connection comes from.
func TestDialsLeaveFromTheInternalIP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	s, err := New(Config{
		NodeName:        "a",
		DataDir:         filepath.Join(t.TempDir(), "a"),
		Listener:        ln,
		Advertise:       ln.Addr().String(),
		BootstrapExpect: 1,
		Members:         newWorld(),
		Logger:          testLogger(t, "a"),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Close()

	peer, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer peer.Close()
	conn, err := s.dialer.DialRPC(ctxT(t, 5*time.Second), peer.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	in, err := peer.Accept()
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	defer in.Close()
	if ip := in.RemoteAddr().(*net.TCPAddr).IP.String(); ip != "127.0.0.2" {
		t.Errorf("connection came from %s, want 127.0.0.2", in.RemoteAddr())
	}
}
