package etcdgrpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kvnode/kvnode/bench/etcd36/etcdgrpc"
	"github.com/kvnode/kvnode/bench/etcd36/etcdtest"
	"github.com/kvnode/kvnode/bench/kvbench"
	"github.com/kvnode/kvnode/bench/kvbench/command"
	"github.com/kvnode/kvnode/bench/kvbench/etcdjson"
)

// TestAgainstEtcd runs kvbench's etcd workloads briefly against a real
// etcd 3.6 (this module's binary), through gRPC and through the JSON
// gateway alike, and checks what they wrote with etcd's own client: the
// same keys and values whichever wire carried them.
func TestAgainstEtcd(t *testing.T) {
	url := etcdtest.Start(t, etcdtest.Binary(t))
	check, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	count := func(t *testing.T, region string) int64 {
		t.Helper()
		resp, err := check.Get(ctx, region+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Count
	}

	for _, target := range []struct {
		name string
		dial kvbench.Dial
	}{{etcdgrpc.Name, etcdgrpc.Dial}, {"etcd", etcdjson.Dial}} {
		t.Run(target.name, func(t *testing.T) {
			region := "r-" + target.name
			run := func(t *testing.T, w kvbench.Workload, set func(*kvbench.Config)) kvbench.Result {
				t.Helper()
				cfg := kvbench.Default()
				cfg.Target, cfg.Endpoints, cfg.Region, cfg.Workload = target.name, []string{url}, region, w
				cfg.Keys, cfg.ValueSize, cfg.Preload, cfg.Concurrency = 300, 218, false, []int{4}
				cfg.MaxOps, cfg.Duration = 100, 2*time.Second
				if set != nil {
					set(&cfg)
				}
				res, err := kvbench.Run(ctx, cfg, target.dial, kvbench.Output{})
				if err != nil || len(res) != 1 {
					t.Fatalf("%s: %v, %v", w, res, err)
				}
				r := res[0]
				if r.Errors != 0 || r.OK == 0 || r.Target != target.name {
					t.Fatalf("%s: %d ok, errors %v, target %s", w, r.OK, r.ErrorsByKind, r.Target)
				}
				return r
			}

			// The bulk load: 300 keys in transactions of at most 128 puts.
			if r := run(t, kvbench.Load, func(c *kvbench.Config) { c.Batch = 128 }); r.OK != 3 || r.EntriesPerSec <= 0 {
				t.Errorf("load: %d transactions, %v entries/s; want 3", r.OK, r.EntriesPerSec)
			}
			if n := count(t, region); n != 300 {
				t.Fatalf("%d keys after the load, want 300", n)
			}
			resp, err := check.Get(ctx, region+"/kvbench-00000007")
			var v struct {
				Type  string `json:"@type"`
				Order int    `json:"purchaseOrderNo"`
			}
			if err != nil || len(resp.Kvs) != 1 || len(resp.Kvs[0].Value) != 218 || json.Unmarshal(resp.Kvs[0].Value, &v) != nil || v.Order != 7 {
				t.Fatalf("key 7: %v, %v", resp, err)
			}

			// Half a second of puts, bounded by time rather than a count.
			if r := run(t, kvbench.Put, func(c *kvbench.Config) { c.MaxOps, c.Duration = kvbench.DefaultMaxOps, 500*time.Millisecond }); r.Seconds < 0.4 || r.Seconds > 1.5 || r.Latency.P50 <= 0 {
				t.Errorf("put for 500 ms: %v s, latency %+v", r.Seconds, r.Latency)
			}
			run(t, kvbench.Get, nil)
			if r := run(t, kvbench.Get, func(c *kvbench.Config) { c.Stale = true }); r.Consistency != "stale" {
				t.Errorf("serializable get: %+v", r)
			}
			run(t, kvbench.MultiPut, func(c *kvbench.Config) { c.Batch = 10 })
			run(t, kvbench.Mixed, nil)
			if n := count(t, region); n != 300 {
				t.Errorf("%d keys after writes over the same 300, want 300", n)
			}
			if r := run(t, kvbench.PutIfAbsent, nil); r.OK != 100 {
				t.Errorf("put-if-absent: %d created", r.OK)
			}
			if n := count(t, region); n != 400 {
				t.Errorf("%d keys after 100 put-if-absent of fresh keys, want 400", n)
			}

			// What etcd refuses, each as its kind.
			cfg := kvbench.Default()
			cfg.Target, cfg.Endpoints, cfg.Region = target.name, []string{url}, region
			tg, err := target.dial(&cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			c := tg.Client(0)
			var oe *kvbench.OpError
			if err := c.Create(ctx, "kvbench-00000001", []byte("{}")); !errors.As(err, &oe) || oe.Kind != etcdjson.KindExists {
				t.Errorf("put-if-absent of a key that exists: %v", err)
			}
			if err := c.Get(ctx, "absent"); !errors.As(err, &oe) || oe.Kind != etcdjson.KindNotFound {
				t.Errorf("get of a missing key: %v", err)
			}
			keys := make([]string, etcdjson.MaxTxnOps+1)
			values := make([][]byte, len(keys))
			for i := range keys {
				keys[i], values[i] = "big-"+strings.Repeat("x", i), []byte("{}")
			}
			if err := c.PutMany(ctx, keys, values); !errors.As(err, &oe) || oe.Retry {
				t.Errorf("a transaction over etcd's limit: %v, want a refusal not worth retrying", err)
			}
		})
	}

	// kvbench-etcd's command line: the gRPC target among kvbench's.
	var out, errOut bytes.Buffer
	targets := append(command.Targets(), command.Target{Name: etcdgrpc.Name, Dial: etcdgrpc.Dial})
	code := command.Run(ctx, []string{"--target", etcdgrpc.Name, "--endpoints", url, "--region", "cli", "--keys", "20",
		"-n", "50", "-c", "2", "--json", "-q"}, nil, &out, &errOut, targets)
	var r kvbench.Result
	if code != 0 || json.Unmarshal(out.Bytes(), &r) != nil || r.Target != etcdgrpc.Name || r.OK != 50 {
		t.Errorf("kvbench --target etcd-grpc: exit %d, %s %s", code, out.String(), errOut.String())
	}
	if n := count(t, "cli"); n != 20 {
		t.Errorf("%d keys after the preload of 20", n)
	}
}
