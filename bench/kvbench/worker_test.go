package kvbench

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// memTarget is a target over a map: what the engine asks of any system,
// without a network. failPutMany answers that many PutMany calls with
// failWith first.
type memTarget struct {
	mu          sync.Mutex
	entries     map[string][]byte
	clients     map[int]bool // the client ids asked for
	failPutMany int
	failWith    error
}

func newMemTarget() *memTarget {
	return &memTarget{entries: map[string][]byte{}, clients: map[int]bool{}}
}

func (m *memTarget) dial(cfg *Config, clients int) (Target, error) { return m, nil }

func (m *memTarget) Prepare(context.Context, func(string, ...any)) (Prepared, error) {
	return Prepared{}, nil
}

func (m *memTarget) Client(id int) Client {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clients[id] = true
	return memClient{m}
}

func (m *memTarget) Close() error { return nil }

type memClient struct{ m *memTarget }

func (c memClient) Put(_ context.Context, key string, v []byte) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	c.m.entries[key] = v
	return nil
}

func (c memClient) Get(_ context.Context, key string) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if c.m.entries[key] == nil {
		return &OpError{Kind: "404"}
	}
	return nil
}

func (c memClient) Create(_ context.Context, key string, v []byte) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if c.m.entries[key] != nil {
		return &OpError{Kind: "exists"}
	}
	c.m.entries[key] = v
	return nil
}

func (c memClient) PutMany(_ context.Context, keys []string, values [][]byte) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if c.m.failPutMany > 0 {
		c.m.failPutMany--
		return c.m.failWith
	}
	for i, k := range keys {
		c.m.entries[k] = values[i]
	}
	return nil
}

// TestRunOnATarget: each workload that every target has runs its count
// of operations through the target's clients, one client per simulated
// client, and writes what it should.
func TestRunOnATarget(t *testing.T) {
	for _, c := range []struct {
		workload Workload
		entries  int64 // per operation
		stored   int   // entries in the target afterwards
	}{
		{Put, 1, 10},
		{Get, 1, 10},
		{Mixed, 1, 10},
		{PutIfAbsent, 1, 100},
		{MultiPut, 4, 10},
		{Load, 4, 10},
	} {
		m := newMemTarget()
		cfg := Default()
		cfg.Target, cfg.Workload, cfg.Keys, cfg.Batch, cfg.MaxOps = "mem", c.workload, 10, 4, 100
		cfg.Concurrency, cfg.Duration = []int{3}, time.Minute
		cfg.Preload = c.workload == Get || c.workload == Mixed
		res, err := Run(context.Background(), cfg, m.dial, Output{})
		if err != nil || len(res) != 1 {
			t.Fatalf("%s: %v, %v", c.workload, res, err)
		}
		r := res[0]
		want := cfg.MaxOps
		if c.workload == Load {
			want = 3 // 10 keys in batches of 4
		}
		if r.OK != want || r.Errors != 0 || r.Target != "mem" || r.RegionType != "" {
			t.Errorf("%s: %d ok, %d errors %v, target %q; want %d ok", c.workload, r.OK, r.Errors, r.ErrorsByKind, r.Target, want)
		}
		if c.workload != Load && r.EntriesPerSec < float64(c.entries)*r.OpsPerSec*0.99 {
			t.Errorf("%s: %v entries/s at %v ops/s", c.workload, r.EntriesPerSec, r.OpsPerSec)
		}
		if len(m.entries) != c.stored {
			t.Errorf("%s: %d entries stored, want %d", c.workload, len(m.entries), c.stored)
		}
		if len(m.clients) != 3 || !m.clients[0] || !m.clients[2] {
			t.Errorf("%s: clients %v, want 0, 1 and 2", c.workload, m.clients)
		}
	}
}

// TestRunRefusesWhatATargetLacks: cas and query need a client that has
// them.
func TestRunRefusesWhatATargetLacks(t *testing.T) {
	for _, w := range []Workload{CAS, Query} {
		cfg := Default()
		cfg.Target, cfg.Workload = "mem", w
		if _, err := Run(context.Background(), cfg, newMemTarget().dial, Output{}); err == nil || !strings.Contains(err.Error(), "target mem has no") {
			t.Errorf("%s on a target without it: %v", w, err)
		}
	}
}

// TestPreloadRetries: the preload asks again while the target says it
// may succeed later, and stops at an error that says it will not.
func TestPreloadRetries(t *testing.T) {
	cfg := Default()
	cfg.Target, cfg.Workload, cfg.Keys, cfg.MaxOps, cfg.Concurrency = "mem", Get, 250, 10, []int{1}
	m := newMemTarget()
	m.failPutMany, m.failWith = 2, StatusError(503, "no leader")
	if res, err := Run(context.Background(), cfg, m.dial, Output{}); err != nil || res[0].OK != 10 || len(m.entries) != 250 {
		t.Errorf("after two 503s: %v, %d entries", err, len(m.entries))
	}
	m = newMemTarget()
	m.failPutMany, m.failWith = 1, StatusError(403, "not allowed")
	if _, err := Run(context.Background(), cfg, m.dial, Output{}); err == nil || !strings.Contains(err.Error(), "preload: keys kvbench-00000000..kvbench-00000099: 403: not allowed") {
		t.Errorf("a 403: %v", err)
	}
}

// TestClassify: how an operation's error becomes its outcome.
func TestClassify(t *testing.T) {
	ctx := context.Background()
	ended, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		ctx   context.Context
		err   error
		class class
		kind  string
	}{
		{ctx, nil, done, ""},
		{ctx, ErrConflict, conflict, ""},
		{ctx, StatusError(503, ""), failed, "503"},
		{ctx, TransportError(context.DeadlineExceeded), failed, "timeout"},
		{ctx, TransportError(errors.New("connection refused")), failed, "transport"},
		{ctx, errors.New("odd"), failed, "error"},
		{ended, TransportError(context.Canceled), aborted, ""},
	} {
		o := classify(c.ctx, opGet, 1, c.err)
		if o.class != c.class || o.errKind != c.kind {
			t.Errorf("%v: class %d kind %q, want %d %q", c.err, o.class, o.errKind, c.class, c.kind)
		}
	}
	if !TransportError(errors.New("refused")).Retry || StatusError(404, "").Retry || !StatusError(503, "").Retry {
		t.Error("retry: no answer and 503 may be retried, a 404 not")
	}
}
