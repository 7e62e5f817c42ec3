package kvrest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/kvnode/kvnode/bench/kvbench"
	"github.com/kvnode/kvnode/client"
)

// Dial is kvnode's REST API as kvbench's target (kvbench.DefaultTarget),
// for up to clients clients in flight over one client.Client.
func Dial(cfg *kvbench.Config, clients int) (kvbench.Target, error) {
	tlsCfg, err := kvbench.TLSConfig(cfg)
	if err != nil {
		return nil, err
	}
	c, err := client.New(clientConfig(cfg, clients, tlsCfg))
	if err != nil {
		return nil, err
	}
	t := &target{cfg: cfg, c: c, region: c.Region(cfg.Region), logf: func(string, ...any) {}}
	if cfg.Stale {
		t.read = []client.Option{client.Stale()}
	}
	if cfg.Workload == kvbench.Query {
		t.query = newQueryPlan(cfg)
	}
	return t, nil
}

// clientConfig is the client of cfg's run: its endpoints, credentials and
// TLS files,
// single hop with --route leader only, one idle connection per client in
// flight to each member (they all may be on one), answers uncompressed (the
// members are on this machine: gzip would cost both ends CPU for nothing,
// and kvbench's own transport never asked for it), and each operation sent
// once: kvbench counts a refusal (a 503, a broken answer) rather than
// hiding it in a retry's latency; a refused connection still moves on to
// the next member, as it cannot have been applied.
func clientConfig(cfg *kvbench.Config, clients int, tlsCfg *tls.Config) client.Config {
	return client.Config{
		Endpoints:             cfg.Endpoints,
		Username:              cfg.User,
		Password:              cfg.Password,
		TLS:                   tlsCfg,
		DialTimeout:           5 * time.Second,
		RetryFor:              -1,
		DisableSingleHop:      cfg.Route != kvbench.Leader,
		MaxIdleConnsPerMember: max(clients, 2),
		DisableCompression:    true,
	}
}

// target is a kvnode cluster reached through package client: the region,
// and the client's count of routed requests at the last TakeRouted.
type target struct {
	cfg        *kvbench.Config
	c          *client.Client
	region     *client.Region
	read       []client.Option // client.Stale() with --consistency stale
	query      *queryPlan
	regionType string
	logf       func(format string, args ...any)
	routed     int64
}

// Prepare creates the region if asked and finds its type, reads the
// routing document under --route leader (the client reads it again when
// a member says it forwarded), and stores the named query.
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
	}
	if t.query != nil && cfg.NamedQuery {
		if err := t.storeQuery(ctx); err != nil {
			return kvbench.Prepared{}, err
		}
	}
	return kvbench.Prepared{RegionType: t.regionType}, nil
}

// Client is client id's way to the cluster: the one client.Client, which
// sends each request to the members in turn, or to its key's leader.
func (t *target) Client(id int) kvbench.Client { return &kvClient{t: t} }

// TakeRouted counts the requests the client sent to their key's leader
// since the last call (client.Stats's Routed).
func (t *target) TakeRouted() int64 {
	r := t.c.Stats().Routed
	d := r - t.routed
	t.routed = r
	return d
}

func (t *target) Close() error { return t.c.Close() }

// kvClient is one of kvbench's clients: each operation is one call of the
// client, bounded by --timeout.
type kvClient struct{ t *target }

// bound is ctx bounded by --timeout.
func (k *kvClient) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, k.t.cfg.Timeout)
}

// Put is Region.Put: PUT /kv/v1/{region}/{key}.
func (k *kvClient) Put(ctx context.Context, key string, v []byte) error {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	return opError(k.t.region.Put(ctx, key, json.RawMessage(v)))
}

// Get is Region.Get, linearizable or (--consistency stale) client.Stale.
func (k *kvClient) Get(ctx context.Context, key string) error {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	_, err := k.t.region.Get(ctx, key, k.t.read...)
	return opError(err)
}

// Create is Region.Create of the key (put-if-absent: POST ?key=); a key
// that exists is a 409.
func (k *kvClient) Create(ctx context.Context, key string, v []byte) error {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	_, err := k.t.region.Create(ctx, key, json.RawMessage(v))
	return opError(err)
}

// PutMany is Region.PutAll: one multi-key PUT, or a PUT of the key alone.
func (k *kvClient) PutMany(ctx context.Context, keys []string, values [][]byte) error {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	entries := make([]client.Entry, len(keys))
	for i, key := range keys {
		entries[i] = client.Entry{Key: key, Value: json.RawMessage(values[i])}
	}
	return opError(k.t.region.PutAll(ctx, entries))
}

// Read is a CAS's read: Region.Get, keeping the value.
func (k *kvClient) Read(ctx context.Context, key string) ([]byte, error) {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	v, err := k.t.region.Get(ctx, key, k.t.read...)
	return v, opError(err)
}

// CAS is Region.CompareAndSet; a 409 (the value was not old) is a
// conflict.
func (k *kvClient) CAS(ctx context.Context, key string, old, next []byte) error {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	err := k.t.region.CompareAndSet(ctx, key, json.RawMessage(old), json.RawMessage(next))
	if errors.Is(err, client.ErrConflict) {
		return kvbench.ErrConflict
	}
	return opError(err)
}

// Query runs the query once, with customer ids drawn from rng as binds.
func (k *kvClient) Query(ctx context.Context, rng *rand.Rand) error {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	return k.t.query.run(ctx, k.t.c, rng)
}
