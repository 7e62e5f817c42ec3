package kvbench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
)

// A Target is the system a run measures, reached the way its users reach
// it. The engine owns everything that makes two systems' numbers
// comparable (the workloads, the keys and values, the load loop, warm-up,
// histograms and results); a Target only carries out one operation and
// says how it ended. kvnode's REST API (package kvrest), etcd's v3 JSON
// gateway (package etcdjson) and etcd's gRPC API (bench/etcd36/etcdgrpc, in
// a module of its own so that etcd stays out of kvnode's go.mod) are the
// targets, which is why this package imports none of them.
type Target interface {
	// Prepare readies the system before the first point (kvnode: creates
	// or finds the region, stores the named query, learns who leads) and
	// says what the results report of the region; logf reports its steps
	// (a wait for the cluster) on the progress output.
	Prepare(ctx context.Context, logf func(format string, args ...any)) (Prepared, error)
	// Client is client id's way to the system, for one point or the
	// preload (0 ≤ id < the clients the target was dialed for). A client
	// is used by one goroutine at a time.
	Client(id int) Client
	// Close ends what the target started and drops its connections.
	Close() error
}

// Prepared is what a target's Prepare found.
type Prepared struct {
	// RegionType is the region's type (REPLICATE or PARTITION), or "" for
	// a system without regions.
	RegionType string
}

// Dial makes cfg's target for up to clients clients in flight. cfg has
// been validated; a Dial refuses what its system cannot do (etcd has no
// regions to create, a transaction of at most 128 operations).
type Dial func(cfg *Config, clients int) (Target, error)

// Client carries out the operations every target has. Each returns nil
// when the operation did what it asked, or an error: an *OpError when the
// system answered otherwise or not at all.
type Client interface {
	// Put writes value to key, whether or not the key exists.
	Put(ctx context.Context, key string, value []byte) error
	// Get reads key, linearizable, or with cfg.Stale from the replica of
	// the member asked (etcd: a serializable range). A missing key is an
	// error.
	Get(ctx context.Context, key string) error
	// Create writes value to key only if the key does not exist
	// (put-if-absent; etcd: a transaction If(CreateRevision(key) == 0)
	// Then(Put)); a key that exists is an error.
	Create(ctx context.Context, key string, value []byte) error
	// PutMany writes value i to key i, all of them or none (kvnode: one
	// multi-key PUT; etcd: one transaction).
	PutMany(ctx context.Context, keys []string, values [][]byte) error
}

// CASClient is a client of a system with the cas workload (kvnode's
// REST API): Read returns a key's current value, CAS replaces old with
// next, or returns ErrConflict when old is no longer the value.
type CASClient interface {
	Read(ctx context.Context, key string) ([]byte, error)
	CAS(ctx context.Context, key string, old, next []byte) error
}

// QueryClient is a client of a system with the query workload (kvnode's
// OQL): Query runs cfg's query once with bind values drawn from rng.
type QueryClient interface {
	Query(ctx context.Context, rng *rand.Rand) error
}

// RouteCounter is a target that sends each key's requests to its group's
// leader (kvnode with --route leader): TakeRouted returns how many it sent
// there since the last call, for the results.
type RouteCounter interface {
	TakeRouted() int64
}

// ErrConflict is a compare-and-set whose expected value was no longer the
// current one: the answer to a lost race, which the results count apart
// from errors.
var ErrConflict = errors.New("conflict: the value changed")

// OpError is an operation that did not do what it asked.
type OpError struct {
	// Kind names the failure in the results: a status code ("503"),
	// "timeout", "transport" (no answer), or the system's own word.
	Kind string
	// Retry says that asking again may succeed (no leader yet, no
	// answer); the setup and the preload retry only these.
	Retry bool
	Err   error
}

func (e *OpError) Error() string {
	if e.Err == nil {
		return e.Kind
	}
	return e.Kind + ": " + e.Err.Error()
}

func (e *OpError) Unwrap() error { return e.Err }

// StatusError is the OpError of an HTTP answer with an unwanted status: a
// 503 (no leader, a member not ready) may be retried. cause, when not
// empty, says what the answer said.
func StatusError(status int, cause string) *OpError {
	e := &OpError{Kind: strconv.Itoa(status), Retry: status == 503}
	if cause != "" {
		e.Err = errors.New(cause)
	}
	return e
}

// TransportError is the OpError of a request that had no answer (refused,
// reset, timed out, TLS): retried but for a certificate the client does
// not trust, or a member refusing this client's certificate or its
// absence, which asking again will not change.
func TransportError(err error) *OpError {
	var cve *tls.CertificateVerificationError
	var op *net.OpError
	certificate := errors.As(err, &cve) || errors.As(err, &op) && op.Op == "remote error" && strings.Contains(op.Err.Error(), "certificate")
	kind := "transport"
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		kind = "timeout"
	}
	return &OpError{Kind: kind, Retry: !certificate, Err: err}
}

// retryable is an error worth asking again.
func retryable(err error) bool {
	var oe *OpError
	return errors.As(err, &oe) && oe.Retry
}

// checkTarget refuses a workload that the target's clients cannot run.
func checkTarget(cfg *Config, c Client) error {
	_, cas := c.(CASClient)
	_, query := c.(QueryClient)
	switch {
	case cfg.Workload == CAS && !cas:
		return fmt.Errorf("workload %s: target %s has no compare-and-set", cfg.Workload, cfg.Target)
	case cfg.Workload == Query && !query:
		return fmt.Errorf("workload %s: target %s has no queries", cfg.Workload, cfg.Target)
	}
	return nil
}
