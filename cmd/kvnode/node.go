package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	sockaddr "github.com/hashicorp/go-sockaddr"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/rest"
	"github.com/kvnode/kvnode/store"
)

// node is one running kvnode: the internal port (store), gossip (cluster)
// and the REST API, wired together. Tests start several in one process.
type node struct {
	cfg    Config
	logger *slog.Logger

	httpLn  net.Listener
	httpSrv *http.Server
	// tls is the node's TLS (nil parts: plain); auth its security file
	// (nil: security off).
	tls      tlsSetup
	auth     *auth.Authenticator
	store    *store.Store
	cluster  *cluster.Cluster
	restURL  string
	serveErr chan error

	cancel context.CancelFunc
}

// nodeOptions are knobs tests turn; the command line never sets them.
type nodeOptions struct {
	raft          store.RaftConfig
	gossipProfile string
	retryJoin     time.Duration
	promoteAfter  time.Duration
	joinGrace     time.Duration
	resolver      *net.Resolver // nil: the system's; tests bring their own DNS
}

// startNode brings a node up: listeners first (so :0 ports are known before
// they are advertised), then the store, gossip and the REST server.
func startNode(ctx context.Context, cfg Config, opts nodeOptions, logger *slog.Logger) (_ *node, err error) {
	n := &node{cfg: cfg, logger: logger, serveErr: make(chan error, 1)}
	var cleanup []func()
	defer func() {
		if err != nil {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
	}()

	if n.tls, err = loadTLS(cfg); err != nil {
		return nil, err
	}
	secret, err := gossipKey(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.SecurityFile != "" {
		if n.auth, err = auth.Load(cfg.SecurityFile); err != nil {
			return nil, fmt.Errorf("--security-file: %w", err)
		}
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
			Version:         version,
		},
		Join:          cfg.Join,
		Resolver:      opts.resolver,
		RetryInterval: opts.retryJoin,
		Profile:       opts.gossipProfile,
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
	n.store, err = store.New(store.Config{
		NodeName:          cfg.Name,
		DataDir:           cfg.DataDir,
		Listener:          storeLn,
		TLS:               n.tls.internalClient,
		Advertise:         advInternal,
		BootstrapExpect:   cfg.BootstrapExpect,
		JoinRequested:     len(cfg.Join) > 0,
		JoinGrace:         opts.joinGrace,
		Members:           n.cluster,
		Raft:              opts.raft,
		DeadMemberTimeout: cfg.DeadMemberTimeout,
		PromoteAfter:      opts.promoteAfter,
		PartitionGroups:   cfg.PartitionGroups,
		ReplicationFactor: cfg.ReplicationFactor,
		// Every body the REST API accepts can be forwarded whole.
		MaxFrameBytes: store.FrameLimit(cfg.MaxBodySize),
		Logger:        logger.With("component", "store"),
	})
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { _ = n.store.Close() })

	fns, err := newFunctions(cfg, n.store, n.cluster, n.restURL)
	if err != nil {
		return nil, err
	}

	ctx, n.cancel = context.WithCancel(ctx)
	n.store.Start()
	n.cluster.Start(ctx)

	api := rest.New(rest.Config{
		Auth:            n.auth,
		Functions:       fns,
		FunctionTimeout: cfg.FunctionTimeout,
		RequestTimeout:  cfg.RequestTimeout,
		MaxBodyBytes:    cfg.MaxBodySize,
		MaxQueryTime:    cfg.MaxQueryTime,
		MaxQueryRows:    cfg.MaxQueryRows,
		Logger:          logger.With("component", "rest"),
	}, n.store, n.cluster, clusterView{store: n.store, members: n.cluster})
	n.httpSrv = &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       max(cfg.RequestTimeout, cfg.MaxQueryTime, cfg.FunctionTimeout) + 30*time.Second,
		WriteTimeout:      max(cfg.RequestTimeout, cfg.MaxQueryTime, cfg.FunctionTimeout) + 30*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    128 << 10, // above rest.MaxURLBytes, so a long URL gets a JSON 414
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	serveLn := n.httpLn
	if n.tls.rest != nil {
		serveLn = tls.NewListener(n.httpLn, n.tls.rest)
	}
	go func() {
		if err := n.httpSrv.Serve(serveLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.serveErr <- fmt.Errorf("REST server: %w", err)
		}
	}()
	if len(cfg.Regions) > 0 {
		go func() {
			if err := n.store.EnsureRegions(ctx, cfg.Regions); err != nil && ctx.Err() == nil {
				logger.Error("creating --regions failed", "error", err)
			}
		}()
	}
	abs, _ := filepath.Abs(cfg.DataDir)
	logger.Info("kvnode started", "name", cfg.Name, "version", version, "rest", n.restURL,
		"http", n.httpLn.Addr().String(), "internal", advInternal, "gossip", n.cluster.LocalAddr(),
		"data_dir", abs, "bootstrap_expect", cfg.BootstrapExpect, "join", cfg.Join,
		"security", n.auth != nil, "tls_rest", n.tls.rest != nil, "tls_internal", n.tls.internalServer != nil, "gossip_encrypted", secret != nil)
	return n, nil
}

// reloadSecurity re-reads the security file (SIGHUP); a file that does not
// load leaves the current one in force.
func (n *node) reloadSecurity() error {
	if n.auth == nil {
		return errors.New("security is off: no --security-file to reload")
	}
	if err := n.auth.Reload(); err != nil {
		n.logger.Error("reloading the security file failed; the previous one stays in force", "error", err)
		return err
	}
	n.logger.Info("security file reloaded", "path", n.cfg.SecurityFile)
	return nil
}

// shutdown stops the node. A graceful shutdown (SIGTERM) stops accepting
// requests, lets in-flight ones finish, hands off leadership, leaves the
// Raft group and gossip, and closes. An abrupt one just closes everything,
// as a crash would, except that files are closed cleanly.
func (n *node) shutdown(graceful bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownTimeout)
	defer cancel()
	var errs []error
	if graceful {
		n.logger.Info("shutting down gracefully")
		if err := n.httpSrv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop REST server: %w", err))
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
	n.logger.Info("kvnode stopped")
	return errors.Join(errs...)
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
