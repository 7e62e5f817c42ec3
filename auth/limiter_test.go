package auth

import (
	"errors"
	"math/bits"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// testFile has one user, admin with password admin-pw.
func testFile(t *testing.T) *File {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte("admin-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return &File{
		Users: []User{{Name: "admin", Password: string(h), Roles: []string{"admin"}}},
		Roles: []Role{{Name: "admin", Permissions: []string{"DATA:READ"}}},
	}
}

// floodAddr is the i-th address of a flood: 10.0.0.0/8 has 16 million.
func floodAddr(i int) string {
	return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String()
}

// TestFailedLoginLimit: a client may fail 10 times in a minute; then it is
// refused, even with the right password, until a minute after its first
// failure, with the time left as RetryAfter; then it starts afresh. Other
// clients are not affected.
func TestFailedLoginLimit(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	start := clock.t
	a := New(testFile(t))
	a.limiter = newLimiter(10, time.Minute, failingClients, clock.now)
	const client = "198.51.100.7"

	failTen := func() {
		t.Helper()
		for i := range 10 {
			_, err := a.Authenticate(client, "admin", "wrong")
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("failed login %d = %v, want ErrUnauthenticated", i+1, err)
			}
			clock.t = clock.t.Add(time.Second)
		}
	}
	throttled := func(want time.Duration) {
		t.Helper()
		_, err := a.Authenticate(client, "admin", "admin-pw")
		var te *ThrottledError
		if !errors.As(err, &te) || !errors.Is(err, ErrThrottled) {
			t.Fatalf("login after 10 failures = %v, want ErrThrottled", err)
		}
		if te.RetryAfter != want || te.Client != client {
			t.Fatalf("refusal = %+v, want client %s, RetryAfter %v", te, client, want)
		}
	}

	failTen() // at start+0s .. start+9s
	throttled(50 * time.Second)
	if _, err := a.Authenticate("198.51.100.8", "admin", "admin-pw"); err != nil {
		t.Fatalf("another client's login = %v, want success", err)
	}
	clock.t = start.Add(time.Minute - 500*time.Millisecond)
	throttled(500 * time.Millisecond)
	if _, err := a.Authenticate(client, "admin", "admin-pw"); err == nil {
		t.Fatal("a refused client logged in before its window ended")
	} else if te := (*ThrottledError)(nil); !errors.As(err, &te) || te.RetryAfterSeconds() != 1 {
		t.Fatalf("refusal half a second before the end = %v, want Retry-After 1 s", err)
	}

	clock.t = start.Add(time.Minute)
	if _, err := a.Authenticate(client, "admin", "admin-pw"); err != nil {
		t.Fatalf("login once the window ended = %v, want success", err)
	}
	windowStart := clock.t
	failTen()
	throttled(windowStart.Add(time.Minute).Sub(clock.t))
}

// TestFailedLoginLimiterEviction pins the trade-off the limiter's doc
// describes: a refused client's count is forgotten only after capacity
// other clients failed since its last attempt, never while it keeps trying.
func TestFailedLoginLimiterEviction(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	const capacity = 100
	l := newLimiter(10, time.Minute, capacity, clock.now)
	const attacker = "203.0.113.9"
	for range 10 {
		l.fail(attacker)
	}
	next := 0
	floodOf := func(n int) {
		for range n {
			l.fail(floodAddr(next))
			next++
		}
	}
	for round := range 3 {
		floodOf(capacity - 1)
		if _, ok := l.allow(attacker); ok {
			t.Fatalf("round %d: the attacker is allowed after %d other clients failed, want refused while it keeps trying", round, capacity-1)
		}
	}
	floodOf(capacity)
	if _, ok := l.allow(attacker); !ok {
		t.Fatalf("the attacker is still refused after %d other clients failed since its last try: the table holds more than its capacity", capacity)
	}
	if n := l.clients.Len(); n != capacity {
		t.Fatalf("the table holds %d clients, want its capacity %d", n, capacity)
	}
}

// TestFailedLoginFlood: a million distinct clients fail to log in, as fast
// as one goroutine can. The table stays within its capacity and the heap
// within a bound (the unbounded map took about 100 bytes per client); a
// failed login stays cheap throughout (the old table swept all of itself
// on every failure past 100,000 clients, so the flood could not finish);
// a known user's valid login during the flood and a fresh client's failed
// login after it stay fast.
func TestFailedLoginFlood(t *testing.T) {
	const (
		clients = 1_000_000
		// Shorter than the window, so that the old table could not sweep
		// away expired entries before the fresh clients came.
		deadline = 45 * time.Second
		// Generous bounds: a failed login takes about a microsecond here
		// (a few under -race); the old sweep took milliseconds.
		maxMeanFail    = 50 * time.Microsecond
		maxMedianLogin = time.Millisecond
		maxHeapGrowth  = 24 << 20
	)
	a := New(testFile(t))
	if _, err := a.Authenticate("192.0.2.1", "admin", "admin-pw"); err != nil {
		t.Fatal(err) // the first login pays bcrypt; later ones are cached
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	l := a.limiter
	done := make(chan struct{})
	var flooded int
	var floodTime time.Duration
	go func() {
		defer close(done)
		t0 := time.Now()
		for flooded < clients && time.Since(t0) < deadline {
			c := floodAddr(flooded)
			if _, ok := l.allow(c); ok {
				l.fail(c)
			}
			flooded++
		}
		floodTime = time.Since(t0)
	}()

	// A known user logs in during the flood, again and again.
	var during latencies
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		t0 := time.Now()
		if _, err := a.Authenticate("192.0.2.1", "admin", "admin-pw"); err != nil {
			t.Fatalf("a valid login during the flood: %v", err)
		}
		during.add(time.Since(t0))
	}

	runtime.GC()
	runtime.ReadMemStats(&after)
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)

	// After the flood: fresh clients fail once each, and the known user logs in.
	const fresh = 10_000
	t0 := time.Now()
	freshDone := 0
	for i := 0; i < fresh && time.Since(t0) < 10*time.Second; i++ {
		c := netip.AddrFrom4([4]byte{172, 16, byte(i >> 8), byte(i)}).String()
		if _, ok := l.allow(c); !ok {
			t.Fatalf("fresh client %s refused", c)
		}
		l.fail(c)
		freshDone++
	}
	freshMean := time.Since(t0) / time.Duration(max(freshDone, 1))
	var afterLogins latencies
	for range 1000 {
		t0 := time.Now()
		if _, err := a.Authenticate("192.0.2.1", "admin", "admin-pw"); err != nil {
			t.Fatalf("a valid login after the flood: %v", err)
		}
		afterLogins.add(time.Since(t0))
	}

	floodMean := floodTime / time.Duration(max(flooded, 1))
	t.Logf("flood: %d clients in %v (%v per failed login); table %d clients; heap %+.1f MiB (%d bytes per table entry)",
		flooded, floodTime.Round(time.Millisecond), floodMean, l.clients.Len(), float64(growth)/(1<<20), growth/int64(max(l.clients.Len(), 1)))
	t.Logf("valid logins during the flood: %d, median ≤ %v, max %v; after: median ≤ %v, max %v; %d fresh clients' failed logins after: %v each",
		during.n, during.median(), during.max, afterLogins.median(), afterLogins.max, freshDone, freshMean)

	if flooded < clients {
		t.Errorf("the flood got through %d of %d failed logins in %v: each failure is too slow", flooded, clients, deadline)
	}
	if floodMean > maxMeanFail {
		t.Errorf("a failed login took %v on average during the flood, want at most %v", floodMean, maxMeanFail)
	}
	if m := during.median(); m > maxMedianLogin {
		t.Errorf("a valid login during the flood took %v (median), want at most %v", m, maxMedianLogin)
	}
	if m := afterLogins.median(); m > maxMedianLogin {
		t.Errorf("a valid login after the flood took %v (median), want at most %v", m, maxMedianLogin)
	}
	if freshMean > maxMeanFail {
		t.Errorf("a fresh client's failed login after the flood took %v on average, want at most %v", freshMean, maxMeanFail)
	}
	if n := l.clients.Len(); n > failingClients {
		t.Errorf("the table holds %d clients, want at most %d", n, failingClients)
	}
	if growth > maxHeapGrowth {
		t.Errorf("the heap grew by %.1f MiB, want at most %.1f MiB", float64(growth)/(1<<20), float64(maxHeapGrowth)/(1<<20))
	}
}

// latencies is a histogram of durations in powers of two, so that a million
// samples take no memory to speak of (the test measures the heap).
type latencies struct {
	buckets [65]int // bucket i counts durations < 2^i ns and ≥ 2^(i-1) ns
	n       int
	max     time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.buckets[bits.Len64(uint64(max(d, 0)))]++
	l.n++
	l.max = max(l.max, d)
}

// median is an upper bound of the median, within a factor of two.
func (l *latencies) median() time.Duration {
	seen := 0
	for i, c := range l.buckets {
		if seen += c; seen > l.n/2 {
			return time.Duration(1) << i
		}
	}
	return l.max
}
