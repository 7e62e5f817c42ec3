package auth

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// failingClients is how many clients the failed-login limiter remembers.
// An entry costs about 180 bytes of heap (TestFailedLoginFlood measures
// it), so a flood of failures from any number of addresses holds at most
// about 12 MiB. Every failed login costs the server a bcrypt comparison
// (tens of milliseconds at the default cost), so even a many-core node
// computes only some thousands of failures a minute: an entry is pushed
// out by tens of thousands of other failing addresses, not by normal
// traffic.
const failingClients = 1 << 16

// ThrottledError refuses a client that failed to log in too often. It is
// ErrThrottled for errors.Is, and says when the client may try again, for
// the REST layer's Retry-After.
type ThrottledError struct {
	Client     string
	RetryAfter time.Duration
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("%s from %s: try again in %d s", ErrThrottled, e.Client, e.RetryAfterSeconds())
}

// Unwrap makes the error ErrThrottled for errors.Is.
func (e *ThrottledError) Unwrap() error { return ErrThrottled }

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up and at
// least 1: trying again that much later is allowed.
func (e *ThrottledError) RetryAfterSeconds() int {
	return max(1, int(math.Ceil(e.RetryAfter.Seconds())))
}

// limiter counts failed logins per client address in fixed windows: a
// client's window opens at its first failure and lasts window; a client
// with max failures in its window is refused until the window ends.
//
// The counts live in an LRU of at most capacity clients, so memory stays
// bounded whatever the number of addresses that fail, and allow and fail
// are O(1) (a map lookup and a list move). The map it replaces grew with
// every distinct failing address and, past 100,000 of them, swept the whole
// table under the lock on every failure: a flood of addresses turned each
// login into a stall.
//
// What an attacker with many addresses can do: an entry leaves the LRU
// only when capacity other clients failed since it was last touched, and a
// refused client touches its entry with every attempt, so it stays
// refused while it keeps trying. To free an address of its count, an
// attacker has to fail from capacity other distinct addresses in the
// meantime, and each of those failures is itself a password guess that
// the limit allowed. So with N addresses an attacker gets at most about
// 10·N guesses a window (the limit per address, times the addresses),
// eviction or not: evicting buys it nothing it could not guess directly.
// Evicting an honest client's entry only forgives that client's count.
// The limit cannot stop an attacker who owns many addresses (an IPv6
// attacker owns a /64); that is what bcrypt's cost is for.
//
// A count-min sketch was the other candidate: fixed memory too, and it
// never forgets a count, but it over-counts: a flood of failures from many
// addresses raises the shared counters until clients who never failed are
// refused. An LRU errs towards forgiving, a sketch towards locking out the
// innocent, and a lock-out that anyone with enough addresses can cause is
// the worse failure for a login limit.
type limiter struct {
	max    int
	window time.Duration
	now    func() time.Time

	mu      sync.Mutex
	clients *simplelru.LRU[string, failures]
}

// failures is one client's window.
type failures struct {
	start time.Time // the first failure of the window
	n     int
}

func newLimiter(max int, per time.Duration, capacity int, now func() time.Time) *limiter {
	clients, err := simplelru.NewLRU[string, failures](capacity, nil)
	if err != nil {
		panic(fmt.Sprintf("failed-login limiter of capacity %d: %v", capacity, err))
	}
	return &limiter{max: max, window: per, now: now, clients: clients}
}

// allow reports whether client may try to log in now, and if not, how long
// until it may.
func (l *limiter) allow(client string) (retryAfter time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, found := l.clients.Get(client)
	if !found {
		return 0, true
	}
	left := f.start.Add(l.window).Sub(l.now())
	if left <= 0 {
		l.clients.Remove(client)
		return 0, true
	}
	if f.n < l.max {
		return 0, true
	}
	return left, false
}

// fail records a failed login of client.
func (l *limiter) fail(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f, found := l.clients.Get(client)
	if !found || now.Sub(f.start) >= l.window {
		f = failures{start: now}
	}
	f.n++
	l.clients.Add(client, f)
}
