package watchbench

import (
	"context"
	"fmt"
	"net/http"
)

// The systems a watch run can measure (Config.Target).
const (
	// TargetKvnode watches GET /kv/v1/watch?region= (Server-Sent Events)
	// and writes with PUT /kv/v1/{region}/{key}, through package client.
	TargetKvnode = "kvnode"
	// TargetEtcd watches with POST /v3/watch and writes with POST
	// /v3/kv/put on etcd's JSON gateway; the region is a key prefix
	// ("{region}/"), so the same run measures both the same way.
	TargetEtcd = "etcd"
)

// target is what differs between the systems measured: how a watcher's
// stream is opened and read, and how a write is sent. The rest of a run
// (the rate, the stamps, the accounting, /metrics) is the same for both,
// which is what makes their numbers comparable.
type target interface {
	// watch opens one stream on the member at base and reads it until
	// ctx ends or the member ends it; err says why it stopped. It calls
	// ready once, when the stream is live (a write after that is
	// delivered to it), and value with each changed value it receives,
	// or with data that holds one (valid only during the call).
	watch(ctx context.Context, hc *http.Client, base string, ready func(), value func(data []byte)) error
	// put writes v to key through the member at base and reads the
	// answer whole; an answer other than success is a *statusError.
	put(ctx context.Context, hc *http.Client, base, key string, v []byte) error
}

// newTarget is cfg's target (Validate has checked its name).
func newTarget(cfg *Config) (target, error) {
	switch cfg.Target {
	case "", TargetKvnode:
		return &kvnodeTarget{region: cfg.Region, user: cfg.User, password: cfg.Password}, nil
	case TargetEtcd:
		return &etcdTarget{prefix: cfg.Region + "/"}, nil
	}
	return nil, fmt.Errorf("target %q: want %s or %s", cfg.Target, TargetKvnode, TargetEtcd)
}
