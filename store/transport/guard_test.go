package transport

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// pipeTCP is both ends of a loopback TCP connection.
func pipeTCP(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// A message that drips in is cut off once it falls behind the rate floor;
// an idle connection between messages is left alone; a message that keeps
// up arrives whole even when it takes longer than the grace.
func TestGuardCutsOffADrip(t *testing.T) {
	p := pace{grace: 200 * time.Millisecond, rate: 64 << 10}

	client, server := pipeTCP(t)
	g := &guardConn{Conn: server, pace: p}
	// Idle for three graces: nothing is timed before a message begins.
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(g, make([]byte, 8))
		done <- err
	}()
	time.Sleep(3 * p.grace)
	// Then one byte every grace/2: far below the floor.
	start := time.Now()
	dripper := client
	go func() {
		for range 20 {
			if _, err := dripper.Write([]byte{1}); err != nil {
				return
			}
			time.Sleep(p.grace / 2)
		}
	}()
	err := <-done
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a dripping message read %v, want a deadline", err)
	}
	if took := time.Since(start); took < p.grace || took > 4*p.grace {
		t.Errorf("the drip was cut off after %v, want about %v", took, p.grace)
	}

	// A message of 256 KiB sent at about twice the floor takes longer than
	// the grace and still arrives; the answer ends it, and the next message
	// starts its own clock.
	client, server = pipeTCP(t)
	g = &guardConn{Conn: server, pace: p}
	const size = 256 << 10
	pacer := client
	go func() {
		buf := make([]byte, 16<<10)
		for sent := 0; sent < size; sent += len(buf) {
			if _, err := pacer.Write(buf); err != nil {
				return
			}
			time.Sleep(time.Second * time.Duration(len(buf)) / time.Duration(2*p.rate))
		}
	}()
	start = time.Now()
	if _, err := io.ReadFull(g, make([]byte, size)); err != nil {
		t.Fatalf("a message that kept up with the floor: %v", err)
	}
	if took := time.Since(start); took < p.grace {
		t.Fatalf("the paced message took %v, less than the grace: the test shows nothing", took)
	}
	if _, err := g.Write([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * p.grace)
	go func() { _, _ = client.Write([]byte("next")) }()
	if _, err := io.ReadFull(g, make([]byte, 4)); err != nil {
		t.Fatalf("the message after an answer: %v", err)
	}
}
