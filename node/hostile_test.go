package node_test

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
	"github.com/kvnode/kvnode/store/admission"
	"github.com/kvnode/kvnode/store/transport"
)

// hostileFrames is how many random frames TestHostilePeer sends.
const hostileFrames = 10_000

// TestHostilePeer: a peer whose certificate the cluster's CA signed, so
// that it passes the internal port's mutual TLS, sends 10,000 random
// frames to a live member: noise, connection headers of unknown kinds or
// for other members, Raft frames of every type with random or truncated
// bodies and huge declared lengths, RPC requests to every route with
// random, cut or huge bodies; and some connections drip a frame a byte at
// a time. Every connection is closed by the member (at once, or for a
// drip once it falls behind transport.MinRate after the grace), the
// member leaks no goroutines or memory, and the cluster goes on taking
// and keeping writes throughout.
func TestHostilePeer(t *testing.T) {
	dir := t.TempDir()
	ca := nodetest.NewCA(t, "kvnode test CA")
	caPath := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caPath, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	gossipKey := base64.StdEncoding.EncodeToString(key)
	ip := nodetest.New(t)
	ip.Tune = func(name string, cfg *node.Config) {
		cfg.TLSCert, cfg.TLSKey = ca.Issue(t, dir, name)
		cfg.TLSCA = caPath
		cfg.GossipKey = gossipKey
	}
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}
	call := httpsCaller(t, ca.PEM)
	waitfor.Cond(t, 60*time.Second, "the cluster to create the regions", func() bool {
		s1, _ := call(ip.Nodes["a"], "POST", "/management/v1/regions", `{"name":"orders","type":"PARTITION"}`)
		s2, _ := call(ip.Nodes["a"], "POST", "/management/v1/regions", `{"name":"ref","type":"REPLICATE"}`)
		return (s1 == 201 || s1 == 409) && (s2 == 201 || s2 == 409)
	})
	target := ip.Nodes["a"]
	var gids []uint64
	for _, g := range target.Store().Status().Groups {
		gids = append(gids, g.ID)
	}

	certPath, keyPath := ca.Issue(t, dir, "evil")
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	peerTLS := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: "localhost", ClientSessionCache: tls.NewLRUClientSessionCache(64)}
	dial := func() (*tls.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", target.InternalAddr(), peerTLS)
	}
	// The certificate is accepted: the peer gets past the handshake.
	if c, err := dial(); err != nil {
		t.Fatalf("the hostile peer's certificate is not accepted, so the test shows nothing: %v", err)
	} else {
		_ = c.Close()
	}

	// Writes through the other members all along; each acknowledged one
	// must be there at the end.
	stopWrites := make(chan struct{})
	var acked []string
	var writeErrs atomic.Int64
	var writes sync.WaitGroup
	writes.Add(1)
	go func() {
		defer writes.Done()
		for i := 0; i < 5000; i++ {
			select {
			case <-stopWrites:
				return
			case <-time.After(20 * time.Millisecond):
			}
			via := ip.Nodes[[]string{"a", "b", "c"}[i%3]]
			k := fmt.Sprint("w", i)
			if status, _ := call(via, "PUT", "/kv/v1/orders/"+k, fmt.Sprintf(`{"i":%d}`, i)); status == 200 {
				acked = append(acked, k)
			} else {
				writeErrs.Add(1)
			}
		}
	}()

	// The baseline is taken once the writes have run for a while: their
	// connections (clients' pools, Raft pipelines) are then open already.
	time.Sleep(5 * time.Second)
	runtime.GC()
	goroutines0 := runtime.NumGoroutine()
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	heap0 := mem.HeapInuse

	// Drips: a Raft frame that declares a 4 GiB value and an RPC body of
	// 1 MiB, a byte every 300 ms.
	type dripResult struct {
		what string
		took time.Duration
		err  error
	}
	drips := make(chan dripResult, 8)
	for i := range 8 {
		what, frame := "a Raft frame", raftHeader(gids[i%len(gids)])
		frame = append(frame, 0, 0x81, 0xa7) // AppendEntries: a map, a key of 7 bytes...
		frame = append(frame, "Entries"...)
		frame = append(frame, 0xdd, 0xff, 0xff, 0xff, 0xff) // ...an array of 4 billion entries
		if i%2 == 1 {
			what = "an RPC body"
			frame = append([]byte{'k', 'P'}, fmt.Sprintf("POST /v1/groups/%d/apply HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n", gids[0], 1<<20)...)
		}
		go func() {
			start := time.Now()
			c, err := dial()
			if err != nil {
				drips <- dripResult{what, 0, err}
				return
			}
			defer c.Close()
			_, _ = c.Write(frame)
			for time.Since(start) < 2*time.Minute {
				time.Sleep(300 * time.Millisecond)
				if _, err := c.Write([]byte{0x01}); err != nil {
					drips <- dripResult{what, time.Since(start), nil}
					return
				}
				_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
				if _, err := c.Read(make([]byte, 512)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
					drips <- dripResult{what, time.Since(start), nil}
					return
				}
			}
			drips <- dripResult{what, time.Since(start), errors.New("still open after 2 minutes")}
		}()
	}

	// The storm: one frame per connection, eight at a time.
	routes := []string{"apply", "applybatch", "scan", "readindex", "term", "snapshot", "read", "watch", "bucket", "query", "nope"}
	var sent, closed atomic.Int64
	var openAfter sync.Map // what -> count of connections the member left open
	var storm sync.WaitGroup
	for w := range 8 {
		storm.Add(1)
		go func() {
			defer storm.Done()
			rng := mrand.New(mrand.NewPCG(uint64(w), 28))
			for i := w; i < hostileFrames; i += 8 {
				what, frame := hostileFrame(rng, gids, routes)
				c, err := dial()
				if err != nil {
					t.Errorf("dial for frame %d: %v", i, err)
					return
				}
				sent.Add(1)
				_, _ = c.Write(frame)
				_ = c.CloseWrite()
				_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
				_, err = io.Copy(io.Discard, c)
				if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
					closed.Add(1) // EOF, or reset by the member
				} else {
					n, _ := openAfter.LoadOrStore(what, new(atomic.Int64))
					n.(*atomic.Int64).Add(1)
				}
				_ = c.Close()
			}
		}()
	}
	storm.Wait()
	t.Logf("sent %d frames; the member closed %d connections", sent.Load(), closed.Load())
	if sent.Load() != hostileFrames {
		t.Fatalf("sent %d frames of %d", sent.Load(), hostileFrames)
	}
	openAfter.Range(func(k, v any) bool {
		t.Errorf("%d connections with %s stayed open 15 s after the frame", v.(*atomic.Int64).Load(), k)
		return true
	})
	for range 8 {
		d := <-drips
		if d.err != nil {
			t.Errorf("a drip of %s: %v", d.what, d.err)
		} else if limit := transport.StallGrace + 10*time.Second; d.took > limit {
			t.Errorf("a drip of %s was cut off after %v, want within %v", d.what, d.took, limit)
		}
	}
	// No goroutine or memory stays behind (the writes still run, so that
	// their connections count on both sides).
	deadline := time.Now().Add(60 * time.Second)
	for runtime.NumGoroutine() > goroutines0+40 {
		if time.Now().After(deadline) {
			_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
			t.Fatalf("%d goroutines 60 s after the storm, %d before it", runtime.NumGoroutine(), goroutines0)
		}
		time.Sleep(200 * time.Millisecond)
	}
	runtime.GC()
	runtime.ReadMemStats(&mem)
	if grew := int64(mem.HeapInuse) - int64(heap0); grew > 64<<20 {
		t.Errorf("the heap in use grew by %d MiB over the storm", grew>>20)
	}
	close(stopWrites)
	writes.Wait()
	t.Logf("goroutines %d before, %d after; heap in use %d MiB before, %d MiB after; %d writes acknowledged, %d failed",
		goroutines0, runtime.NumGoroutine(), heap0>>20, mem.HeapInuse>>20, len(acked), writeErrs.Load())

	// The cluster kept taking writes, kept every one it acknowledged, and
	// the member still serves.
	if len(acked) < 20 {
		t.Errorf("only %d writes were acknowledged during the storm (%d failed)", len(acked), writeErrs.Load())
	}
	for _, name := range []string{"a", "b", "c"} {
		if status, body := call(ip.Nodes[name], "PUT", "/kv/v1/ref/after-"+name, `{"ok":true}`); status != 200 {
			t.Errorf("a write through %s after the storm: %d %s", name, status, body)
		}
	}
	for i := 0; i < len(acked); i += 50 {
		keys := strings.Join(acked[i:min(i+50, len(acked))], ",")
		if status, body := call(target, "GET", "/kv/v1/orders/"+keys, ""); status != 200 || strings.Contains(body, "null") {
			t.Fatalf("acknowledged writes read back from a: %d %.300s", status, body)
		}
	}
	if status, body := call(target, "GET", "/management/v1/cluster", ""); status != 200 || strings.Contains(body, `"name":"evil"`) {
		t.Errorf("/management/v1/cluster after the storm: %d %.300s", status, body)
	}
}

// raftHeader is the internal port's header of a Raft connection to group
// gid (transport's kindRaft).
func raftHeader(gid uint64) []byte {
	return binary.AppendUvarint([]byte{'k', 'R'}, gid)
}

// hostileFrame is one random frame of a hostile peer, and what kind it is.
func hostileFrame(rng *mrand.Rand, gids []uint64, routes []string) (string, []byte) {
	noise := func(max int) []byte {
		b := make([]byte, rng.IntN(max+1))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	gid := gids[rng.IntN(len(gids))]
	if rng.IntN(10) == 0 {
		gid = uint64(rng.IntN(1000)) // often not hosted here
	}
	switch rng.IntN(10) {
	case 0:
		return "noise", noise(4096)
	case 1:
		kind := byte(rng.Uint32())
		for kind == 'R' || kind == 'T' || kind == 'P' {
			kind = byte(rng.Uint32())
		}
		return "an unknown connection kind", append([]byte{'k', kind}, noise(256)...)
	case 2:
		h := append([]byte{'k', 'T'}, binary.AppendUvarint(nil, gid)...)
		name := "someone-else"
		return "a Raft connection for another member", append(append(binary.AppendUvarint(h, uint64(len(name))), name...), noise(256)...)
	case 3:
		// Truncated: part of a valid header.
		full := append(raftHeader(gid), 0)
		return "a truncated header", full[:rng.IntN(len(full))]
	case 4, 5:
		// A Raft frame of a random type (not TimeoutNow, 3, which a
		// member may send to hand over its leadership) with a random body.
		typ := byte(rng.IntN(256))
		if typ == 3 {
			typ = 0
		}
		return "a Raft frame with a random body", append(append(raftHeader(gid), typ), noise(4096)...)
	case 6:
		// A Raft frame that declares a huge value and stops.
		f := append(raftHeader(gid), byte(rng.IntN(3)), 0x81, 0xa7)
		f = append(f, "Entries"...)
		f = append(f, 0x91, 0x81, 0xa4)
		f = append(f, "Data"...)
		return "a Raft frame with a huge declared length", append(f, 0xc6, 0xff, 0xff, 0xff, 0xf0, 1, 2, 3)
	case 7:
		return "an RPC connection with noise", append([]byte{'k', 'P'}, noise(2048)...)
	default:
		route := routes[rng.IntN(len(routes))]
		path := fmt.Sprintf("/v1/groups/%d/%s", gid, route)
		switch rng.IntN(6) {
		case 0:
			path = admission.Path
		case 1:
			path = "/v1/status"
		}
		body := noise(2048)
		declared := len(body)
		what := "an RPC request with a random body"
		switch rng.IntN(4) {
		case 0:
			declared, what = len(body)+1+rng.IntN(1<<20), "an RPC request with a cut body"
		case 1:
			declared, what = 1<<40, "an RPC request with a huge declared body"
		}
		req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: a\r\nKv-Timeout-Ms: 500\r\nContent-Length: %d\r\n\r\n", path, declared)
		return what, append(append([]byte{'k', 'P'}, req...), body...)
	}
}
