package chunked

import (
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
)

func TestCopyAppendClone(t *testing.T) {
	src := make([]byte, 3*Step+17)
	for i := range src {
		src[i] = byte(i * 7)
	}
	dst := make([]byte, len(src))
	if n := Copy(dst, src); n != len(src) || !bytes.Equal(dst, src) {
		t.Fatalf("Copy copied %d bytes, equal %v", n, bytes.Equal(dst, src))
	}
	if n := Copy(dst[:5], src); n != 5 {
		t.Fatalf("Copy into a shorter dst copied %d", n)
	}
	out := Append([]byte("head"), src)
	if !bytes.Equal(out[:4], []byte("head")) || !bytes.Equal(out[4:], src) || cap(out) != len(out) {
		t.Fatalf("Append: %d bytes, cap %d", len(out), cap(out))
	}
	roomy := make([]byte, 2, 10)
	if got := Append(roomy, []byte("abc")); &got[0] != &roomy[0] || string(got[2:]) != "abc" {
		t.Fatal("Append with room did not append in place")
	}
	if c := Clone(src); !bytes.Equal(c, src) || &c[0] == &src[0] {
		t.Fatal("Clone is not a copy")
	}
	if Clone(nil) != nil {
		t.Fatal("Clone(nil) is not nil")
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	if Checksum(src, tab) != crc32.Checksum(src, tab) || Update(5, tab, src) != crc32.Update(5, tab, src) {
		t.Fatal("the checksum differs from hash/crc32's")
	}
}

func TestReadAll(t *testing.T) {
	body := strings.Repeat("0123456789", 500_000) // 5 MB: several parts
	for _, tc := range []struct {
		name  string
		hint  int64
		limit int64
	}{{"size known", int64(len(body)), -1}, {"size unknown", -1, -1}, {"hint too small", 10, -1}, {"hint too large", 1 << 30, -1}, {"at the limit", -1, int64(len(body))}} {
		got, err := ReadAll(iotest.HalfReader(strings.NewReader(body)), tc.hint, tc.limit)
		if err != nil || string(got) != body {
			t.Errorf("%s: %d bytes, %v", tc.name, len(got), err)
		}
	}
	_, err := ReadAll(strings.NewReader(body), -1, int64(len(body))-1)
	var tooLong *TooLongError
	if !errors.As(err, &tooLong) || tooLong.Limit != int64(len(body))-1 {
		t.Errorf("over the limit: %v", err)
	}
	if got, err := ReadAll(strings.NewReader(""), 0, 10); err != nil || len(got) != 0 {
		t.Errorf("empty: %q %v", got, err)
	}
	boom := errors.New("boom")
	if _, err := ReadAll(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), -1, -1); !errors.Is(err, boom) {
		t.Errorf("a failing reader: %v", err)
	}
}

// TestCopyLetsOthersRun is why the package exists: with one P, a goroutine
// that must run every millisecond is held up no longer than a step or so
// while another copies 256 MiB into fresh memory with Copy. The built-in
// copy of the same holds it up for the whole copy (logged, not asserted:
// how long depends on the machine).
func TestCopyLetsOthersRun(t *testing.T) {
	if testing.Short() {
		t.Skip("copies 512 MiB")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	src := make([]byte, 256<<20)
	for i := 0; i < len(src); i += 4096 {
		src[i] = 1
	}
	lateness := func(copyAll func(dst, src []byte)) time.Duration {
		var worst atomic.Int64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			last := time.Now()
			for {
				select {
				case <-stop:
					return
				default:
				}
				time.Sleep(time.Millisecond)
				if d := time.Since(last); int64(d) > worst.Load() {
					worst.Store(int64(d))
				}
				last = time.Now()
			}
		}()
		time.Sleep(20 * time.Millisecond)
		copyAll(make([]byte, len(src)), src) // fresh pages, faulted in by the copy
		close(stop)
		<-done
		return time.Duration(worst.Load())
	}
	builtin := lateness(func(dst, src []byte) { copy(dst, src) })
	// The best of three: on a loaded machine (make test runs packages side
	// by side on two cores) the kernel may hold the sleeper up by itself;
	// the built-in copy holds it up every time.
	chunked := time.Hour
	for range 3 {
		chunked = min(chunked, lateness(func(dst, src []byte) { Copy(dst, src) }))
	}
	t.Logf("with one P, a 1 ms sleeper was held up at most %v by the built-in copy of 256 MiB, %v by Copy", builtin, chunked)
	if chunked > 100*time.Millisecond {
		t.Errorf("Copy of 256 MiB held another goroutine up for %v (the built-in copy: %v); want a step or so", chunked, builtin)
	}
}
