package client_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// testCluster is a real cluster of in-process members and a client of it.
type testCluster struct {
	*nodetest.Cluster
	names []string
	c     *client.Client
	// seen records the answers the client received, per request.
	seen *recorder
}

// startCluster starts n members (their Config adjusted by tune, when not
// nil), waits for a leader and the partition table, and makes a client of
// every member whose transport records what it sends and receives.
func startCluster(t *testing.T, n int, tune func(name string, cfg *node.Config)) *testCluster {
	t.Helper()
	nc := nodetest.New(t)
	nc.Tune = tune
	nc.KeepAddrs = true // a restarted member comes back where the client knows it
	tc := &testCluster{Cluster: nc, seen: &recorder{next: http.DefaultTransport}}
	var endpoints []string
	for i := range n {
		name := "m" + string(rune('1'+i))
		nc.Start(name, n)
		tc.names = append(tc.names, name)
	}
	nc.Leader()
	for _, name := range tc.names {
		endpoints = append(endpoints, nc.Nodes[name].RESTURL())
	}
	c, err := client.New(client.Config{Endpoints: endpoints, Transport: tc.seen})
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 30*time.Second, "every group to have a leader", func() bool {
		rt, err := c.Routing(ctx(t))
		if err != nil {
			return false
		}
		for _, g := range rt.Groups {
			if g.URL == "" {
				return false
			}
		}
		return len(rt.Groups) > 1
	})
	t.Cleanup(func() { _ = c.Close() })
	tc.c = c
	return tc
}

// ctx is a context for one step of a test.
func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// exchange is one request the client sent and the answer's headers.
type exchange struct {
	method, url string
	status      int
	header      http.Header // the answer's
	routed      bool        // the request carried Kvnode-Route
}

// recorder is an http.RoundTripper that remembers every exchange.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	log  []exchange
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	ex := exchange{method: req.Method, url: req.URL.String(), routed: req.Header.Get("Kvnode-Route") != ""}
	if err == nil {
		ex.status, ex.header = resp.StatusCode, resp.Header
	}
	r.mu.Lock()
	r.log = append(r.log, ex)
	r.mu.Unlock()
	return resp, err
}

// take returns the exchanges since the last take and forgets them.
func (r *recorder) take() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.log
	r.log = nil
	return out
}
