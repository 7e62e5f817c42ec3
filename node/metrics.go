package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/function"
	"github.com/kvnode/kvnode/metrics"
	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest"
	"github.com/kvnode/kvnode/store/raftgroup"
)

// The node's metrics (package metrics): the registry is built before the
// store, whose groups report to it (store.Config.Observe); what it reads
// at scrape time comes from the store and gossip through sources; queries
// and function executions are measured here, around the calls the REST
// API makes; REST requests and logins by the REST server itself
// (rest.Config.Observer). GET /metrics on the REST port needs CLUSTER:READ;
// --metrics-addr serves the same on a plain listener of its own, without
// authentication, for scrapers, with /livez and /readyz for probes (as
// etcd's --listen-metrics-urls serves /metrics and /health).

// newMetrics builds n's registry; its sources read n's store and gossip
// when scraped, so they may be set up before either starts.
func newMetrics(n *Node) *metrics.Registry {
	return metrics.New(metrics.Options{
		Version: n.cfg.Version,
		Logger:  n.logger.With("component", "metrics"),
		Sources: metrics.Sources{
			Groups:  n.groupMetrics,
			Gossip:  n.gossipMetrics,
			DataDir: n.cfg.DataDir,
		},
	})
}

// observeGroup gives Raft group gid its instruments.
func observeGroup(m *metrics.Registry) func(gid uint64) raftgroup.Observer {
	return func(gid uint64) raftgroup.Observer { return m.Group(gid) }
}

// groupMetrics is every group open here with its regions' sizes: the
// groups' status and counts the state machines keep, no scan.
func (n *Node) groupMetrics() []metrics.GroupState {
	if n.store == nil {
		return nil
	}
	st := n.store.Status()
	out := make([]metrics.GroupState, 0, len(st.Groups))
	for _, g := range st.Groups {
		gs := metrics.GroupState{
			ID: g.ID, State: g.State, Term: g.Term, CommitIndex: g.CommitIndex, AppliedIndex: g.AppliedIndex,
			LastIndex: g.LastIndex, Voters: len(g.Voters), NonVoters: len(g.NonVoters),
		}
		// This replica as it is (a stale read: no barrier, no member asked).
		if f, err := n.store.Router().LocalPart(context.Background(), g.ID, region.Stale); err == nil {
			for _, r := range f.RegionSizes() {
				gs.Regions = append(gs.Regions, metrics.RegionSize{Region: r.Region, Entries: int64(r.Entries), Bytes: r.Bytes})
			}
		}
		out = append(out, gs)
	}
	return out
}

// gossipMetrics counts the members gossip knows by status.
func (n *Node) gossipMetrics() metrics.GossipState {
	if n.cluster == nil {
		return metrics.GossipState{}
	}
	var g metrics.GossipState
	for _, m := range n.cluster.Members() {
		switch m.Status {
		case cluster.StatusAlive:
			g.Alive++
		case cluster.StatusFailed:
			g.Failed++
		case cluster.StatusLeft:
			g.Left++
		}
	}
	g.HealthScore = n.cluster.HealthScore()
	if n.admission != nil {
		g.Refused = n.admission.Refused()
	}
	return g
}

// Query runs a client's query and records its duration, rows or failure.
func (d data) Query(ctx context.Context, c region.Consistency, q *oql.Query, params []any, opt oql.Options) (*oql.Result, error) {
	start := time.Now()
	res, err := d.Engine.Query(ctx, c, q, params, opt)
	rows := 0
	if res != nil {
		rows = len(res.Rows)
	}
	d.metrics.QueryDone(time.Since(start), rows, err)
	return res, err
}

// measuredFunctions counts and times the function executions clients ask
// this member for, by function and outcome.
type measuredFunctions struct {
	rest.Functions
	metrics *metrics.Registry
}

func (f measuredFunctions) Execute(ctx context.Context, req function.Request) ([]json.RawMessage, bool, error) {
	start := time.Now()
	results, has, err := f.Functions.Execute(ctx, req)
	outcome := metrics.FunctionOK
	switch {
	case errors.Is(err, function.ErrUnknownFunction):
		// Not a function: ids no deployment named would grow the series.
		return results, has, err
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		outcome = metrics.FunctionTimeout
	case err != nil:
		outcome = metrics.FunctionError
	}
	f.metrics.FunctionDone(req.ID, outcome, time.Since(start))
	return results, has, err
}

// metricsServer serves /metrics, /livez and /readyz on --metrics-addr.
type metricsServer struct {
	ln     net.Listener
	srv    *http.Server
	logger *slog.Logger
}

// listenMetrics listens on addr, so that a taken port fails the start
// before anything else opens; serve starts serving.
func listenMetrics(addr string, logger *slog.Logger) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on --metrics-addr %s: %w", addr, err)
	}
	return &metricsServer{ln: ln, logger: logger}, nil
}

// serve serves metrics at /metrics, and api's /livez and /readyz, without
// authentication or TLS: what probes and scrapers need when the REST port
// asks for what they cannot give (a client certificate, as etcd's
// --listen-metrics-urls serves /metrics and /health). Nothing else of api
// is reachable here.
func (m *metricsServer) serve(metrics, api http.Handler) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	mux.Handle("GET /livez", api) // and HEAD
	mux.Handle("GET /readyz", api)
	m.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		WriteTimeout:      time.Minute,
		ErrorLog:          slog.NewLogLogger(m.logger.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := m.srv.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.logger.Warn("metrics listener stopped", "error", err)
		}
	}()
	m.logger.Info("metrics listener on: /metrics, /livez and /readyz are served there without authentication", "addr", m.ln.Addr().String())
}

// Addr is the address the metrics listener listens on.
func (m *metricsServer) Addr() string { return m.ln.Addr().String() }

// close stops serving (or only listening, before serve).
func (m *metricsServer) close() {
	if m.srv != nil {
		_ = m.srv.Close()
	}
	_ = m.ln.Close()
}
