package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	sockaddr "github.com/hashicorp/go-sockaddr"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/internal/reload"
	"github.com/kvnode/kvnode/metrics"
	"github.com/kvnode/kvnode/rest"
	"github.com/kvnode/kvnode/rest/watch"
	"github.com/kvnode/kvnode/store"
	"github.com/kvnode/kvnode/store/admission"
	"github.com/kvnode/kvnode/store/catalog"
	"github.com/kvnode/kvnode/store/expiry"
	"github.com/kvnode/kvnode/store/query"
	"github.com/kvnode/kvnode/store/rebalance"
	"github.com/kvnode/kvnode/store/regions"
	"github.com/kvnode/kvnode/store/transport"
)

// Node is one running kvnode member: the internal port (store), gossip
// (cluster) and the REST API, wired together. Several may run in one
// process (the tests do).
type Node struct {
	cfg    Config
	logger *slog.Logger

	httpLn  net.Listener
	httpSrv *http.Server
	debug   *debugServer // nil unless Config.PprofAddr is set
	// metrics is the node's registry; metricsSrv serves it on
	// Config.MetricsAddr (nil when unset).
	metrics    *metrics.Registry
	metricsSrv *metricsServer
	// tls is the node's TLS (nil parts: plain); auth its security file
	// (nil: security off); files keeps both in force as they change.
	tls   tlsSetup
	auth  *auth.Authenticator
	files *reload.Watcher
	store *store.Store
	// admission checks the other members' identity; identity is this
	// member's own, as it proves it to them.
	admission *admission.Checker
	identity  admission.Identity
	regions   *regions.API
	queries   *query.Engine
	cluster   *cluster.Cluster
	restURL   string
	serveErr  chan error

	cancel   context.CancelFunc
	stopOnce sync.Once
	stopErr  error
}

// Start checks cfg and brings a node up: listeners first (so :0 ports are
// known before they are advertised), then the store, gossip and the REST
// server. It returns once the node serves; the cluster may still be
// forming (see /readyz). Ending ctx stops background work such as
// creating cfg.Regions, not the node: Shutdown or Close does that.

// readHeaderTimeout bounds how long any of the node's HTTP listeners (the
// API, --metrics-addr, --pprof-addr) waits for a request's headers, so a
// client that opens connections and sends nothing cannot hold them.
const readHeaderTimeout = 10 * time.Second

func Start(ctx context.Context, cfg Config) (_ *Node, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		if logger, err = NewLogger(os.Stderr, cfg.LogLevel, cfg.LogFormat); err != nil {
			return nil, err
		}
	}
	n := &Node{cfg: cfg, logger: logger, serveErr: make(chan error, 1)}
	n.metrics = newMetrics(n)
	var cleanup []func()
	defer func() {
		if err != nil {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
	}()

	if n.files, err = n.loadFiles(cfg); err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { _ = n.files.Close() })
	secret, err := gossipKey(cfg)
	if err != nil {
		return nil, err
	}
	internalLn, err := net.Listen("tcp", cfg.InternalAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on --internal-addr %s: %w", cfg.InternalAddr, err)
	}
	cleanup = append(cleanup, func() { _ = internalLn.Close() })
	n.httpLn, err = net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on --http-addr %s: %w", cfg.HTTPAddr, err)
	}
	cleanup = append(cleanup, func() { _ = n.httpLn.Close() })
	if cfg.PprofAddr != "" {
		if n.debug, err = startDebug(cfg.PprofAddr, logger); err != nil {
			return nil, err
		}
		cleanup = append(cleanup, n.debug.close)
	}
	if cfg.MetricsAddr != "" {
		if n.metricsSrv, err = listenMetrics(cfg.MetricsAddr, logger); err != nil {
			return nil, err
		}
		cleanup = append(cleanup, n.metricsSrv.close)
	}

	host, err := advertiseHost()
	if err != nil {
		return nil, err
	}
	advInternal := advertiseAddr(internalLn.Addr(), host)
	if cfg.AdvertiseInternal != "" {
		advInternal = cfg.AdvertiseInternal
	}
	n.restURL = cfg.AdvertiseHTTP
	if n.restURL == "" {
		scheme := "http://"
		if n.tls.rest != nil {
			scheme = "https://"
		}
		n.restURL = scheme + advertiseAddr(n.httpLn.Addr(), host)
	}

	// Gossip on an unspecified address advertises the same host as the
	// other ports, so a machine without a private IP still works.
	gossipBind, gossipAdvertise := cfg.GossipAddr, ""
	if h, p, _ := net.SplitHostPort(gossipBind); h == "" || net.ParseIP(h).IsUnspecified() {
		gossipBind = net.JoinHostPort("0.0.0.0", p)
		if p != "0" {
			gossipAdvertise = net.JoinHostPort(host, p)
		}
	}
	if cfg.AdvertiseGossip != "" {
		gossipAdvertise = cfg.AdvertiseGossip
	}
	n.cluster, err = cluster.New(cluster.Config{
		Name:          cfg.Name,
		BindAddr:      gossipBind,
		AdvertiseAddr: gossipAdvertise,
		Meta: cluster.Meta{
			RESTURL:         n.restURL,
			InternalAddr:    advInternal,
			Groups:          cfg.Groups,
			BootstrapExpect: cfg.BootstrapExpect,
			Version:         cfg.Version,
			Formats:         fsm.Formats,
		},
		Join:          cfg.Join,
		Resolver:      cfg.Resolver,
		RetryInterval: cfg.RetryJoin,
		Profile:       cfg.GossipProfile,
		SecretKey:     secret,
		Logger:        logger.With("component", "gossip"),
	})
	if err != nil {
		return nil, fmt.Errorf("start gossip on %s: %w", cfg.GossipAddr, err)
	}
	cleanup = append(cleanup, func() { _ = n.cluster.Shutdown() })

	storeLn := internalLn
	if n.tls.internalServer != nil {
		storeLn = tls.NewListener(internalLn, n.tls.internalServer)
	}
	// Members prove who they are over the internal port before they join
	// a Raft group (package admission). The checks dial as the store does,
	// with a client of their own whose connections are dropped after
	// every round: each check is a handshake of its own.
	n.identity = admission.Identity{Name: cfg.Name, Addr: advInternal, Key: secret}
	n.admission = admission.New(admission.Config{
		Self:    n.identity,
		TLS:     n.tls.internalClient != nil,
		Members: n.cluster,
		Caller: transport.NewClient(&transport.Dialer{
			Net: &net.Dialer{Timeout: 2 * time.Second, LocalAddr: transport.SourceAddr(internalLn)},
			TLS: n.tls.internalClient,
		}, 64<<10, nil),
		Logger:   logger.With("component", "admission"),
		Observer: n.metrics,
	})
	n.store, err = store.New(store.Config{
		NodeName:          cfg.Name,
		DataDir:           cfg.DataDir,
		Listener:          storeLn,
		TLS:               n.tls.internalClient,
		Advertise:         advInternal,
		BootstrapExpect:   cfg.BootstrapExpect,
		JoinRequested:     len(cfg.Join) > 0,
		JoinGrace:         cfg.JoinGrace,
		Members:           n.admission.Watch(n.cluster),
		Admission:         n.admission,
		Raft:              cfg.Raft,
		DeadMemberTimeout: cfg.DeadMemberTimeout,
		PromoteAfter:      cfg.PromoteAfter,
		CatchUpTimeout:    cfg.CatchUpTimeout,
		PartitionGroups:   initialGroups(cfg),
		ReplicationFactor: cfg.ReplicationFactor,
		// Every body the REST API accepts can be forwarded whole.
		MaxFrameBytes: transport.FrameLimit(cfg.MaxBodySize),
		Logger:        logger.With("component", "store"),
		Observe:       observeGroup(n.metrics),
	})
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { _ = n.store.Close() })

	n.regions = regions.New(n.store.Router(), logger.With("component", "regions"))
	n.queries = query.New(n.store.Router(), n.regions.Parts())
	cat := catalog.New(n.store.Router())
	// Bucket moves and rebalances: recorded in the control group, carried
	// out by its leader (package store/rebalance).
	mover := rebalance.NewMover(n.store.Router(), n.regions.Parts(), logger.With("component", "rebalance"))
	mover.Rate = cfg.RebalanceRate
	rebalanceOps := rebalance.NewOperations(n.store.Router())
	fns, err := newFunctions(cfg, n.store, n.regions, n.queries, cat, trusted{n.cluster, n.admission}, n.restURL)
	if err != nil {
		return nil, err
	}

	n.store.HandleRPC("POST "+admission.Path, n.identity)

	ctx, n.cancel = context.WithCancel(ctx)
	go n.admission.Run(ctx.Done())
	n.store.Start()
	n.cluster.Start(ctx)
	go expiry.Run(ctx, n.store.Router(), expiry.Interval, logger.With("component", "expiry"))
	mover.Observer = n.metrics.Buckets()
	auto := rebalance.Auto{Rebalance: cfg.AutoRebalance, Groups: cfg.PartitionGroupsAuto, Members: n.controlMembers}
	runner := rebalance.NewRunner(rebalanceOps, mover, n.store.IsLeader, auto, logger.With("component", "rebalance"))
	runner.Parallel = cfg.RebalanceMoves
	go runner.Run(ctx, time.Second)

	api := rest.New(rest.Config{
		Auth:            n.auth,
		ClientCertAuth:  cfg.ClientCertAuth,
		Functions:       measuredFunctions{Functions: fns, metrics: n.metrics},
		FunctionTimeout: cfg.FunctionTimeout,
		RequestTimeout:  cfg.RequestTimeout,
		MaxBodyBytes:    cfg.MaxBodySize,
		MaxQueryTime:    cfg.MaxQueryTime,
		MaxQueryRows:    cfg.MaxQueryRows,
		CORSOrigins:     cfg.CORSOrigins,
		Logger:          logger.With("component", "rest"),
		Metrics:         n.metrics.Handler(false), // the REST server compresses
		Observer:        n.metrics.HTTP(),
		Backup:          n.serveBackup(cfg, logger.With("component", "backup")),
		RemoveMember:    n.store.RemoveMember,
		Rebalances:      rebalances{rebalanceOps},
		Routing:         routingDoc{clusterView{store: n.store, members: n.cluster, admission: n.admission}, n.regions}.Document,
		Watch: watch.Config{
			MaxWatchers: cfg.MaxWatchers,
			Buffer:      cfg.WatchBuffer,
			Observer:    n.metrics.Watch(),
			Logger:      logger.With("component", "watch"),
		},
	}, data{Store: n.store, API: n.regions, Engine: n.queries, Catalog: cat, metrics: n.metrics}, trusted{n.cluster, n.admission}, clusterView{store: n.store, members: n.cluster, admission: n.admission})
	n.httpSrv = &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       max(cfg.RequestTimeout, cfg.MaxQueryTime, cfg.FunctionTimeout) + 30*time.Second,
		WriteTimeout:      max(cfg.RequestTimeout, cfg.MaxQueryTime, cfg.FunctionTimeout) + 30*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    128 << 10, // above rest.MaxURLBytes, so a long URL gets a JSON 414
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	// Watches never end on their own: Shutdown ends them (an error event
	// with the resume token) rather than wait for them.
	n.httpSrv.RegisterOnShutdown(api.CloseWatches)
	serveLn := n.httpLn
	if n.tls.rest != nil {
		serveLn = tls.NewListener(lingerListener{n.httpLn}, n.tls.rest)
	}
	go func() {
		if err := n.httpSrv.Serve(serveLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.serveErr <- fmt.Errorf("REST server: %w", err)
		}
	}()
	if n.metricsSrv != nil {
		n.metricsSrv.serve(n.metrics.Handler(true), n.httpSrv.Handler)
	}
	if len(cfg.Regions) > 0 {
		go func() {
			if err := n.regions.EnsureRegions(ctx, cfg.Regions); err != nil && ctx.Err() == nil {
				logger.Error("creating --regions failed", "error", err)
			}
		}()
	}
	n.files.Start()
	if n.tls.internalServer != nil && secret == nil {
		logger.Warn("the internal port runs mutual TLS but gossip is not encrypted (no --gossip-key): anyone who reaches the gossip port can read the members' names and addresses, " +
			"join gossip and be listed by /management/v1/cluster (as refused), and spread false failure reports and metadata that make members flap; " +
			"it cannot join a Raft group, reach data or be listed by /servers (it has no certificate the internal port accepts). Set --gossip-key on every member to keep strangers out of gossip too")
	}
	abs, _ := filepath.Abs(cfg.DataDir)
	logger.Info("kvnode started", "name", cfg.Name, "version", cfg.Version, "rest", n.restURL,
		"http", n.httpLn.Addr().String(), "internal", advInternal, "gossip", n.cluster.LocalAddr(),
		"data_dir", abs, "bootstrap_expect", cfg.BootstrapExpect, "join", cfg.Join,
		"security", n.auth != nil, "pprof", cfg.PprofAddr, "metrics", cfg.MetricsAddr, "tls_rest", n.tls.rest != nil, "tls_internal", n.tls.internalServer != nil, "peer_names", cfg.PeerNames, "client_cert_auth", cfg.ClientCertAuth, "gossip_encrypted", secret != nil)
	if cfg.ClientCertAuth && n.auth == nil {
		logger.Warn("--client-cert-auth without --security-file: every client certificate the client CA accepts may read, write and manage everything")
	}
	return n, nil
}

// data is what the REST API reads and changes: the regions, entries and
// indexes (package regions), queries (package query, measured: Query),
// named queries (the catalog), and the store's readiness.
type data struct {
	*store.Store
	*regions.API
	*query.Engine
	*catalog.Catalog
	metrics *metrics.Registry
}

// Shutdown stops the node gracefully, as SIGTERM does, within
// Config.ShutdownTimeout. While the REST API still serves, it reports
// itself not ready and hands the leadership of every group it leads to
// another voter (store.HandOver), so that no group waits for an election;
// then it stops accepting requests and lets in-flight ones finish (the
// writes they forward go to the new leaders), and closes. By default
// that is all: the member stays in the cluster and catches up when it
// starts again (a restart). With Config.LeaveOnShutdown it also leaves
// gossip and the Raft groups, waiting while its partition replicas move
// to the others (a scale-down). Only the first Shutdown or Close does
// anything.
func (n *Node) Shutdown() error { return n.stop(true) }

// Close stops the node abruptly, as a crash would, except that files are
// closed cleanly: the other members see it fail. Only the first Shutdown or
// Close does anything.
func (n *Node) Close() error { return n.stop(false) }

func (n *Node) stop(graceful bool) error {
	n.stopOnce.Do(func() { n.stopErr = n.shutdown(graceful) })
	return n.stopErr
}

// Err delivers an error if the REST server stops serving on its own.
func (n *Node) Err() <-chan error { return n.serveErr }

// Name is the node's member name.
func (n *Node) Name() string { return n.cfg.Name }

// Config is the configuration the node was started with.
func (n *Node) Config() Config { return n.cfg }

// HTTPAddr is the address the REST API listens on (with the port chosen
// when Config.HTTPAddr asked for port 0).
func (n *Node) HTTPAddr() string { return n.httpLn.Addr().String() }

// RESTURL is the REST base URL the node advertises to the cluster.
func (n *Node) RESTURL() string { return n.restURL }

// InternalAddr is the internal port's address the node advertises to the
// cluster (Raft and node-to-node RPC).
func (n *Node) InternalAddr() string { return n.identity.Addr }

// GossipAddr is the address gossip listens on, what others --join.
func (n *Node) GossipAddr() string { return n.cluster.LocalAddr() }

// PprofAddr is the address the debug listener listens on, empty when it
// is off.
func (n *Node) PprofAddr() string {
	if n.debug == nil {
		return ""
	}
	return n.debug.Addr()
}

// MetricsAddr is the address the metrics listener listens on, empty when
// it is off.
func (n *Node) MetricsAddr() string {
	if n.metricsSrv == nil {
		return ""
	}
	return n.metricsSrv.Addr()
}

// Store is the node's store, for tests and programs that embed a node.
func (n *Node) Store() *store.Store { return n.store }

func (n *Node) shutdown(graceful bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownTimeout)
	defer cancel()
	var errs []error
	if graceful {
		n.shutdownGracefully(ctx, &errs)
	} else {
		_ = n.httpSrv.Close()
	}
	n.cancel()
	if err := n.cluster.Shutdown(); err != nil {
		errs = append(errs, fmt.Errorf("stop gossip: %w", err))
	}
	if err := n.store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close store: %w", err))
	}
	if err := n.files.Close(); err != nil {
		errs = append(errs, fmt.Errorf("stop watching files: %w", err))
	}
	if n.debug != nil {
		n.debug.close()
	}
	if n.metricsSrv != nil {
		n.metricsSrv.close()
	}
	n.logger.Info("kvnode stopped")
	return errors.Join(errs...)
}

// shutdownGracefully is the graceful part of shutdown: hand over, stop
// serving, and leave when Config.LeaveOnShutdown asks to.
func (n *Node) shutdownGracefully(ctx context.Context, errs *[]error) {
	leave := n.cfg.LeaveOnShutdown
	mode := "restart: the member stays in the cluster"
	if leave {
		mode = "leave: the member leaves the cluster"
	}
	n.logger.Info("shutting down gracefully", "mode", mode)
	// Leadership first, while this member still serves: a write that
	// arrives meanwhile is forwarded to the new leader (a refused append
	// is retried there), and one already appended commits under it.
	if err := n.store.HandOver(ctx); err != nil {
		n.logger.Warn("handing over leadership did not finish", "error", err)
	}
	if err := n.httpSrv.Shutdown(ctx); err != nil {
		*errs = append(*errs, fmt.Errorf("stop REST server: %w", err))
	}
	if !leave {
		// A group whose leadership came back while requests drained
		// (an election this member won) is handed over again.
		if err := n.store.HandOver(ctx); err != nil {
			n.logger.Warn("handing over leadership did not finish", "error", err)
		}
		return
	}
	// Gossip first: once the others see this member leaving they stop
	// adding it back to Raft, while its Raft groups keep serving until
	// its partition replicas have moved (store.Leave waits for that).
	if err := n.cluster.Leave(5 * time.Second); err != nil {
		n.logger.Warn("leaving gossip failed", "error", err)
	}
	if err := n.store.Leave(ctx); err != nil {
		n.logger.Warn("leaving the cluster's Raft groups did not finish", "error", err)
	}
}

// advertiseHost is the address other machines reach this one at when a
// listen address does not name one: the private IP with a default route
// (what Consul and memberlist pick), or loopback on a machine without one.
func advertiseHost() (string, error) {
	ip, err := sockaddr.GetPrivateIP()
	if err != nil {
		return "", fmt.Errorf("find an address to advertise: %w", err)
	}
	if ip == "" {
		return "127.0.0.1", nil
	}
	return ip, nil
}

// advertiseAddr is addr with an unspecified IP replaced by host.
func advertiseAddr(addr net.Addr, host string) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String()
	}
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
	}
	return tcp.String()
}
