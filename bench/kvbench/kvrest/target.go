package kvrest

import (
	"context"
	"math/rand/v2"
	"sync"

	"github.com/kvnode/kvnode/bench/kvbench"
)

// Dial is kvnode's REST API as kvbench's target (kvbench.DefaultTarget),
// for up to clients clients in flight over one HTTP client.
func Dial(cfg *kvbench.Config, clients int) (kvbench.Target, error) {
	tx, err := newTransport(cfg, clients)
	if err != nil {
		return nil, err
	}
	t := &target{cfg: cfg, tx: tx, logf: func(string, ...any) {}}
	if cfg.Workload == kvbench.Query {
		t.query = newQueryPlan(cfg)
	}
	return t, nil
}

// target is a kvnode cluster: its members' REST ports, the region, and
// under --route leader the map of who leads, kept fresh while the run
// lasts.
type target struct {
	cfg        *kvbench.Config
	tx         *transport
	query      *queryPlan
	regionType string
	logf       func(format string, args ...any)
	// stop ends the leader refresh and waits for it.
	stop func()
}

// Prepare creates the region if asked and finds its type, learns who
// leads under --route leader (and keeps learning until Close), and stores
// the named query.
func (t *target) Prepare(ctx context.Context, logf func(format string, args ...any)) (kvbench.Prepared, error) {
	cfg := t.cfg
	t.logf = logf
	if cfg.CreateRegion != "" {
		if err := t.createRegion(ctx); err != nil {
			return kvbench.Prepared{}, err
		}
	}
	var err error
	if t.regionType, err = t.lookupRegion(ctx); err != nil {
		return kvbench.Prepared{}, err
	}
	if cfg.Route == kvbench.Leader {
		if err := t.findLeaders(ctx); err != nil {
			return kvbench.Prepared{}, err
		}
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.refreshLeaders(ctx)
		}()
		t.stop = func() { cancel(); wg.Wait() }
	}
	if t.query != nil && cfg.NamedQuery {
		if err := t.storeQuery(ctx); err != nil {
			return kvbench.Prepared{}, err
		}
	}
	return kvbench.Prepared{RegionType: t.regionType}, nil
}

// Client is client id: its requests go to the endpoints in turn, starting
// at its own, or to their key's leader.
func (t *target) Client(id int) kvbench.Client { return &client{t: t, id: id} }

// TakeRouted counts the requests sent to their key's leader since the
// last call.
func (t *target) TakeRouted() int64 { return t.tx.routed.Swap(0) }

func (t *target) Close() error {
	if t.stop != nil {
		t.stop()
	}
	t.tx.close()
	return nil
}

// client sends one client's requests (requests.go says which each
// operation sends).
type client struct {
	t    *target
	id   int
	sent uint64 // requests sent: which endpoint is next
}

// exchange sends r and wants the status want: another answer is a
// kvbench.StatusError, none a kvbench.TransportError.
func (c *client) exchange(ctx context.Context, r request, want int) (answer, error) {
	base := c.t.tx.endpoint(r, c.id, c.sent)
	c.sent++
	a, err := c.t.tx.send(ctx, base, r)
	switch {
	case err != nil:
		return a, kvbench.TransportError(err)
	case a.status != want:
		return a, kvbench.StatusError(a.status, causeOf(a))
	}
	return a, nil
}

func (c *client) Put(ctx context.Context, key string, v []byte) error {
	_, err := c.exchange(ctx, putRequest(c.t.cfg.Region, key, v), 200)
	return err
}

func (c *client) Get(ctx context.Context, key string) error {
	_, err := c.exchange(ctx, getRequest(c.t.cfg.Region, key, c.t.cfg.Stale), 200)
	return err
}

func (c *client) Create(ctx context.Context, key string, v []byte) error {
	_, err := c.exchange(ctx, createRequest(c.t.cfg.Region, key, v), 201)
	return err
}

// PutMany sends one multi-key PUT, or a PUT of the key alone.
func (c *client) PutMany(ctx context.Context, keys []string, values [][]byte) error {
	r := putRequest(c.t.cfg.Region, keys[0], values[0])
	if len(keys) > 1 {
		r = multiPutRequest(c.t.cfg.Region, keys, values)
	}
	_, err := c.exchange(ctx, r, 200)
	return err
}

// Read is a CAS's read: GET, linearizable or stale, keeping the value.
func (c *client) Read(ctx context.Context, key string) ([]byte, error) {
	r := getRequest(c.t.cfg.Region, key, c.t.cfg.Stale)
	r.keep = true
	a, err := c.exchange(ctx, r, 200)
	return a.body, err
}

// CAS is PUT ?op=CAS; a 409 (the value was not old) is a conflict.
func (c *client) CAS(ctx context.Context, key string, old, next []byte) error {
	a, err := c.exchange(ctx, casRequest(c.t.cfg.Region, key, old, next), 200)
	if err != nil && a.status == 409 {
		return kvbench.ErrConflict
	}
	return err
}

// Query runs the query once, with customer ids drawn from rng as binds.
func (c *client) Query(ctx context.Context, rng *rand.Rand) error {
	q := c.t.query
	_, err := c.exchange(ctx, q.request(q.binds(rng)), 200)
	return err
}
