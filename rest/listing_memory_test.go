package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/region"
)

// These tests use the HTTP API and the Store's write methods only, so that
// they also run against the handlers that built whole answers in memory
// (and fail there).

// bigRegion fills a region of kind with n entries through the store, in
// chunks, and returns the exact sizes of its /keys and ?limit=ALL bodies.
func bigRegion(t *testing.T, st Store, name string, kind region.Kind, n int) (keysSize, allSize int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := st.CreateRegion(ctx, region.Info{Name: name, Kind: kind}); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 120)
	keyPad := strings.Repeat("k", 80)
	keysSize = int64(len(`{"keys":[]}`)) + int64(n-1)
	allSize = int64(len(`{"`+name+`":[]}`)) + int64(n-1)
	const chunk = 2000
	for start := 0; start < n; start += chunk {
		entries := make([]region.Entry, 0, chunk)
		for i := start; i < min(start+chunk, n); i++ {
			k := fmt.Sprintf("key-%07d-%s", i, keyPad)
			v := fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, pad)
			entries = append(entries, region.Entry{Key: k, Value: json.RawMessage(v)})
			keysSize += int64(len(k) + 2)
			allSize += int64(len(v))
		}
		if err := st.Put(ctx, name, entries, region.TTL{}); err != nil {
			t.Fatalf("load %s at %d: %v", name, start, err)
		}
	}
	return keysSize, allSize
}

// heapObjects is the heap's object bytes, live and not yet swept.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// peakHeap runs f while sampling the heap, and returns how far the heap
// rose above where it stood after a collection before f.
func peakHeap(f func()) (growth uint64) {
	runtime.GC()
	base := heapObjects()
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			if h := heapObjects(); h > peak {
				peak = h
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	wg.Wait()
	if peak < base {
		return 0
	}
	return peak - base
}

// Listing a large region streams it: the node's heap rises by far less
// than the answer's size (the old handlers held the whole answer, and
// more, in memory). The collector runs often during the test (GOGC=1), so
// garbage adds at most about 1 MiB to the rise.
func TestListingMemoryDoesNotGrowWithRegion(t *testing.T) {
	const n = 200_000
	st := newTestStore(t)
	ts := serve(t, Config{RequestTimeout: 2 * time.Minute}, st, nil)
	sizes := map[string][2]int64{}
	for _, kind := range []region.Kind{region.Replicate, region.Partition} {
		name := strings.ToLower(string(kind))
		k, a := bigRegion(t, st, name, kind, n)
		sizes[name] = [2]int64{k, a}
	}
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	for _, name := range []string{"replicate", "partition"} {
		for i, path := range []string{"/kv/v1/" + name + "/keys", "/kv/v1/" + name + "?limit=ALL"} {
			want := sizes[name][i]
			var got int64
			growth := peakHeap(func() {
				resp, err := http.Get(ts.base + path)
				if err != nil {
					t.Fatalf("GET %s: %v", path, err)
				}
				defer resp.Body.Close()
				got, err = io.Copy(io.Discard, resp.Body)
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("GET %s: status %d, read %d bytes: %v", path, resp.StatusCode, got, err)
				}
			})
			if got != want {
				t.Errorf("GET %s: body of %d bytes, want %d", path, got, want)
			}
			t.Logf("GET %s: answer %.1f MiB, heap rose %.2f MiB", path, float64(got)/(1<<20), float64(growth)/(1<<20))
			if limit := uint64(want / 4); growth > limit {
				t.Errorf("GET %s: the heap rose %.1f MiB while sending an answer of %.1f MiB; want under 1/4 of it (%.1f MiB)",
					path, float64(growth)/(1<<20), float64(want)/(1<<20), float64(limit)/(1<<20))
			}
		}
	}
}

// listingGoroutines counts goroutines inside the listing handlers.
func listingGoroutines() int {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	s := buf.String()
	return strings.Count(s, "rest.(*Server).listEntries") + strings.Count(s, "rest.(*Server).listKeys")
}

// A client that goes away in the middle of a listing ends it: the handler
// (and with it the scan) stops at once, long before the request's
// deadline would end it.
func TestListingStopsWhenClientGoesAway(t *testing.T) {
	const n = 100_000
	st := newTestStore(t)
	ts := serve(t, Config{RequestTimeout: 2 * time.Minute}, st, nil)
	// A server whose deadline ends a listing that a client stops reading
	// without going away.
	short := serve(t, Config{RequestTimeout: time.Second}, st, nil)
	for _, kind := range []region.Kind{region.Replicate, region.Partition} {
		name := strings.ToLower(string(kind))
		bigRegion(t, st, name, kind, n)
		for _, path := range []string{"/kv/v1/" + name + "/keys", "/kv/v1/" + name + "?limit=ALL"} {
			t.Run(path, func(t *testing.T) {
				conn := stalledListing(t, ts, path)
				_ = conn.Close()
				waitfor.Cond(t, 5*time.Second, "the listing handler to end after the client left", func() bool { return listingGoroutines() == 0 })
			})
			t.Run(path+" past the deadline", func(t *testing.T) {
				conn := stalledListing(t, short, path)
				defer conn.Close()
				waitfor.Cond(t, 10*time.Second, "the listing handler to end at its deadline, the client still there", func() bool { return listingGoroutines() == 0 })
				// What the client can still read is an incomplete answer.
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				rest, _ := io.ReadAll(conn)
				if bytes.HasSuffix(rest, []byte("0\r\n\r\n")) {
					t.Errorf("the answer ended with the last chunk, as a complete one does")
				}
			})
		}
	}
}

// stalledListing sends GET path on a raw connection, reads the start of the
// answer and then stops reading, until the handler is blocked writing.
func stalledListing(t *testing.T, ts *testServer, path string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 512)
	if _, err := io.ReadFull(conn, head); err != nil {
		t.Fatalf("read the start of the answer: %v", err)
	}
	if !bytes.HasPrefix(head, []byte("HTTP/1.1 200")) {
		t.Fatalf("answer starts %q", head[:40])
	}
	// The client reads no more: the handler fills the socket buffers and
	// waits.
	waitfor.Cond(t, 10*time.Second, "the listing handler to be blocked on the client", func() bool { return listingGoroutines() == 1 })
	return conn
}
