package etcdgrpc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/bench/kvbench"
	"github.com/kvnode/kvnode/bench/kvbench/etcdjson"
)

// Name is the target's name for --target.
const Name = "etcd-grpc"

// dialTimeout bounds each client's first connection.
const dialTimeout = 5 * time.Second

// Dial is etcd's gRPC API as kvbench's target: one clientv3.Client per
// kvbench client, each its own gRPC connection balanced over every
// endpoint, as etcd's benchmark tool runs with --conns equal to
// --clients (a shared connection would measure gRPC's multiplexing of one
// TCP stream, which kvnode's HTTP clients do not share).
func Dial(cfg *kvbench.Config, clients int) (kvbench.Target, error) {
	if err := etcdjson.Check(cfg); err != nil {
		return nil, err
	}
	tlsCfg, err := kvbench.TLSConfig(cfg)
	if err != nil {
		return nil, err
	}
	t := &target{cfg: cfg, conns: make([]*clientv3.Client, 0, clients)}
	for range clients {
		c, err := clientv3.New(clientv3.Config{
			Endpoints:   cfg.Endpoints,
			DialTimeout: dialTimeout,
			TLS:         tlsCfg,
			Logger:      zap.NewNop(), // failures are counted in the results
		})
		if err != nil {
			_ = t.Close() // the error to report is the dial's
			return nil, fmt.Errorf("etcd client %d of %d: %w", len(t.conns)+1, clients, err)
		}
		t.conns = append(t.conns, c)
	}
	return t, nil
}

type target struct {
	cfg   *kvbench.Config
	conns []*clientv3.Client
}

// Prepare has nothing to prepare: etcd's key space needs no region, and
// the preload retries while the cluster has no leader.
func (t *target) Prepare(context.Context, func(string, ...any)) (kvbench.Prepared, error) {
	return kvbench.Prepared{}, nil
}

func (t *target) Client(id int) kvbench.Client { return &client{cfg: t.cfg, kv: t.conns[id]} }

func (t *target) Close() error {
	var errs []error
	for _, c := range t.conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// client is one kvbench client's connection.
type client struct {
	cfg *kvbench.Config
	kv  clientv3.KV
}

// op runs do under the request timeout (cfg.Timeout, as HTTP targets
// bound each request), turning its error into an *OpError.
func (c *client) op(ctx context.Context, do func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	if err := do(ctx); err != nil {
		return opError(err)
	}
	return nil
}

func (c *client) key(k string) string { return etcdjson.Key(c.cfg.Region, k) }

func (c *client) Put(ctx context.Context, key string, v []byte) error {
	return c.op(ctx, func(ctx context.Context) error {
		_, err := c.kv.Put(ctx, c.key(key), string(v))
		return err
	})
}

// Get is a range of the key alone, serializable with cfg.Stale.
func (c *client) Get(ctx context.Context, key string) error {
	var opts []clientv3.OpOption
	if c.cfg.Stale {
		opts = append(opts, clientv3.WithSerializable())
	}
	return c.op(ctx, func(ctx context.Context) error {
		resp, err := c.kv.Get(ctx, c.key(key), opts...)
		if err == nil && len(resp.Kvs) == 0 {
			return &kvbench.OpError{Kind: etcdjson.KindNotFound}
		}
		return err
	})
}

// Create is If(CreateRevision(key) == 0) Then(Put).
func (c *client) Create(ctx context.Context, key string, v []byte) error {
	k := c.key(key)
	return c.op(ctx, func(ctx context.Context) error {
		resp, err := c.kv.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).Then(clientv3.OpPut(k, string(v))).Commit()
		if err == nil && !resp.Succeeded {
			return &kvbench.OpError{Kind: etcdjson.KindExists}
		}
		return err
	})
}

// PutMany is one transaction of the puts.
func (c *client) PutMany(ctx context.Context, keys []string, values [][]byte) error {
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		ops[i] = clientv3.OpPut(c.key(k), string(values[i]))
	}
	return c.op(ctx, func(ctx context.Context) error {
		_, err := c.kv.Txn(ctx).Then(ops...).Commit()
		return err
	})
}

// opError names a failed call by its gRPC code ("Unavailable", etcd's no
// leader too, may be retried), or "timeout"; an *OpError passes through.
func opError(err error) error {
	var oe *kvbench.OpError
	if errors.As(err, &oe) {
		return err
	}
	code := codes.Unknown
	var ee rpctypes.EtcdError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.As(err, &ee):
		code = ee.Code()
	default:
		if s, ok := status.FromError(err); ok {
			code = s.Code()
		}
	}
	if code == codes.DeadlineExceeded {
		return &kvbench.OpError{Kind: "timeout", Retry: true, Err: err}
	}
	return &kvbench.OpError{Kind: code.String(), Retry: code == codes.Unavailable, Err: err}
}
