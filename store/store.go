package store

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/datadir"
	"github.com/kvnode/kvnode/store/expiry"
	"github.com/kvnode/kvnode/store/forward"
	"github.com/kvnode/kvnode/store/raftgroup"
	"github.com/kvnode/kvnode/store/reconcile"
	"github.com/kvnode/kvnode/store/transport"
)

// Membership is the gossip view the store reads: who is alive, where their
// internal port is, and when their status last changed. Package cluster
// implements it; gossip observes, and the store (group 0's leader) decides.
type Membership interface {
	Members() []cluster.Member
	Subscribe() (<-chan struct{}, func())
}

// Config configures a Store.
type Config struct {
	// NodeName is this node's Raft server ID and gossip name.
	NodeName string
	// DataDir holds the Raft logs and snapshots of every group.
	DataDir string
	// Listener is the internal port (Raft and RPC). The store owns it and
	// closes it on Close.
	Listener net.Listener
	// Advertise is the host:port other nodes dial for Listener.
	Advertise string
	// BootstrapExpect is how many members must be seen before the control
	// group is bootstrapped (Consul's bootstrap-expect).
	BootstrapExpect int
	// JoinRequested says the node was given other nodes to join. A node with
	// BootstrapExpect 1 then waits up to JoinGrace to find an existing
	// cluster before it bootstraps a cluster of its own.
	JoinRequested bool
	JoinGrace     time.Duration
	// Members is the gossip view. Nil means a standalone node: the only
	// member is this node itself (embedding, tests).
	Members Membership
	// Raft tunes every Raft group.
	Raft raftgroup.Config
	// DeadMemberTimeout is how long a failed member stays in Raft before
	// group 0's leader removes it (default 72h).
	DeadMemberTimeout time.Duration
	// ReconcileInterval is how often the leader reconciles membership even
	// without gossip events (default 1s).
	ReconcileInterval time.Duration
	// PromoteAfter is how long a non-voter must have been a caught-up
	// member before it is promoted to voter (default 1s).
	PromoteAfter time.Duration
	// CatchUpTimeout and Admission: see reconcile.Config (nil Admission:
	// every member gossip shows may join, as in tests of the store alone).
	CatchUpTimeout time.Duration
	Admission      reconcile.Admission
	// LeaderWait bounds how long a request waits for a group to have a
	// leader before it is answered "no leader" (default 5s).
	LeaderWait time.Duration
	// PartitionGroups (P) and ReplicationFactor (RF) shape the partition
	// table when this node's control group creates it; afterwards the
	// table's values rule (defaults 4 and 3).
	PartitionGroups   int
	ReplicationFactor int
	// TLS, when set, is the client side of mutual TLS on the internal
	// port: the certificate this node presents and the CA it trusts. The
	// caller wraps Listener with the matching server side.
	TLS *tls.Config
	// MaxFrameBytes is the frame limit: the largest command or answer this
	// node sends to or accepts from another member (default
	// transport.DefaultFrameBytes; transport.FrameLimit(maxBody) carries request bodies of
	// maxBody bytes; at most transport.FrameLimit(transport.MaxBodyBytes)). See readFrame.
	MaxFrameBytes int64
	Logger        *slog.Logger
	// Observe, when set, gives each Raft group opened here its observer
	// (the node's metrics); nil observes nothing.
	Observe func(gid uint64) raftgroup.Observer
}

func (c *Config) setDefaults() {
	if c.BootstrapExpect <= 0 {
		c.BootstrapExpect = 1
	}
	if c.JoinGrace == 0 {
		c.JoinGrace = 10 * time.Second
	}
	if c.DeadMemberTimeout == 0 {
		c.DeadMemberTimeout = 72 * time.Hour
	}
	if c.ReconcileInterval == 0 {
		c.ReconcileInterval = time.Second
	}
	if c.PromoteAfter == 0 {
		c.PromoteAfter = time.Second
	}
	if c.LeaderWait == 0 {
		c.LeaderWait = 5 * time.Second
	}
	if c.PartitionGroups == 0 {
		c.PartitionGroups = 4
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = 3
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = transport.DefaultFrameBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Members == nil {
		c.Members = standalone{cluster.Member{
			Name:   c.NodeName,
			Meta:   cluster.Meta{InternalAddr: c.Advertise, BootstrapExpect: c.BootstrapExpect, Formats: fsm.Formats},
			Status: cluster.StatusAlive,
			Since:  time.Now(),
		}}
	}
}

// standalone is the membership of a node without gossip: itself.
type standalone struct{ self cluster.Member }

func (s standalone) Members() []cluster.Member { return []cluster.Member{s.self} }

func (s standalone) Subscribe() (<-chan struct{}, func()) { return nil, func() {} }

// stringAddr is a net.Addr for an advertised host:port that may be a DNS
// name, which net.TCPAddr cannot hold.
type stringAddr string

func (a stringAddr) Network() string { return "tcp" }
func (a stringAddr) String() string  { return string(a) }

var _ net.Addr = stringAddr("")

// Store owns every Raft group of this node and routes operations to them.
type Store struct {
	cfg    Config
	name   string
	logger *slog.Logger

	mux        *transport.Mux
	rpc        *rpcServer
	reconciler *reconcile.Reconciler
	client     *rpcClient
	dialer     *transport.Dialer

	groups *groupSet
	router *Router

	started   time.Time
	stopping  atomic.Bool // since HandOver: see there
	stopOnce  sync.Once
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// ControlGroup is the ID of group 0: metadata and replicated regions.
const ControlGroup = partition.ControlGroup

// controlGroup is ControlGroup, as the package spells it inside.
const controlGroup = ControlGroup

// New opens the node's data dir and starts group 0's Raft instance. It does
// not bootstrap or talk to other nodes until Start.
func New(cfg Config) (*Store, error) {
	cfg.setDefaults()
	if cfg.NodeName == "" {
		return nil, errors.New("store: node name is empty")
	}
	if cfg.Listener == nil {
		return nil, errors.New("store: no internal listener")
	}
	if cfg.Advertise == "" {
		return nil, errors.New("store: no advertised internal address")
	}
	if cfg.MaxFrameBytes < 1<<20 || cfg.MaxFrameBytes > transport.FrameLimit(transport.MaxBodyBytes) {
		return nil, fmt.Errorf("store: frame limit %d bytes: must be between 1 MiB and %d bytes (request bodies of at most %d bytes)", cfg.MaxFrameBytes, transport.FrameLimit(transport.MaxBodyBytes), transport.MaxBodyBytes)
	}
	// The format first: a dir a newer kvnode wrote is refused before
	// anything in it is read or written.
	format, used, err := datadir.CheckFormat(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if err := datadir.Claim(cfg.DataDir, cfg.NodeName); err != nil {
		return nil, err
	}
	if format != datadir.Format {
		if err := datadir.RecordFormat(cfg.DataDir); err != nil {
			return nil, err
		}
		if used {
			// 0: a dir of a release before the format file (format 1 or 2).
			cfg.Logger.Info("data dir upgraded in place", "dir", cfg.DataDir, "from", format, "to", datadir.Format)
		}
	}
	s := &Store{
		cfg:     cfg,
		name:    cfg.NodeName,
		logger:  cfg.Logger,
		dialer:  &transport.Dialer{Net: &net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second, LocalAddr: transport.SourceAddr(cfg.Listener)}, TLS: cfg.TLS},
		started: time.Now(),
		stop:    make(chan struct{}),
	}
	s.mux = transport.NewMux(cfg.Listener, stringAddr(cfg.Advertise), cfg.NodeName, cfg.Logger)
	s.client = newRPCClient(s.dialer, cfg.MaxFrameBytes)
	s.rpc = newRPCServer(s)
	s.router = &Router{cfg: cfg, name: cfg.NodeName, logger: cfg.Logger, client: s.client, rpc: s.rpc, stop: s.stop,
		fwd: forward.New(s.client.Client, rpcCodes, func(ctx context.Context, addr string, gid uint64, cmd []byte) (*codec.Result, error) {
			return s.client.apply(ctx, addr, gid, cmd, false)
		})}
	s.groups = &groupSet{
		dataDir: cfg.DataDir,
		self:    cfg.NodeName,
		mux:     s.mux,
		dialer:  s.dialer,
		members: cfg.Members,
		raft:    cfg.Raft,
		logger:  cfg.Logger,
		confirm: s.router.confirmLeadership,
		observe: cfg.Observe,
		m:       map[uint64]*raftgroup.Group{},
	}
	s.router.groups = s.groups
	s.router.view = &tableView{groups: s.groups, members: cfg.Members, self: cfg.NodeName, logger: cfg.Logger, formats: expiry.Cached(s.groups.formats, time.Second)}
	s.reconciler = reconcile.New(reconcile.Config{
		Self:              cfg.NodeName,
		Advertise:         cfg.Advertise,
		Members:           cfg.Members,
		Admission:         cfg.Admission,
		BootstrapExpect:   cfg.BootstrapExpect,
		JoinRequested:     cfg.JoinRequested,
		JoinGrace:         cfg.JoinGrace,
		Started:           s.started,
		DeadMemberTimeout: cfg.DeadMemberTimeout,
		ReconcileInterval: cfg.ReconcileInterval,
		PromoteAfter:      cfg.PromoteAfter,
		CatchUpTimeout:    cfg.CatchUpTimeout,
		PartitionGroups:   cfg.PartitionGroups,
		ReplicationFactor: cfg.ReplicationFactor,
		Logger:            cfg.Logger,
	}, host{s}, s.stop)

	if err := s.groups.openControl(); err != nil {
		_ = s.mux.Close()
		return nil, err
	}
	if err := s.groups.openExisting(); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("reopen partition groups: %w", err)
	}
	return s, nil
}

// Start begins serving the internal port and the background loops:
// bootstrap (when the node has no state) and membership reconciliation.
func (s *Store) Start() {
	s.wg.Add(4)
	go func() { defer s.wg.Done(); s.reconciler.RunPartitions() }()
	go func() { defer s.wg.Done(); s.mux.Serve() }()
	go func() {
		defer s.wg.Done()
		if err := s.rpc.srv.Serve(s.mux.RPCListener()); err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("internal RPC server stopped", "error", err)
		}
	}()
	go func() { defer s.wg.Done(); s.reconciler.RunControl() }()
}

// Router is the store's apply and read paths, for the packages above it
// (regions, query, catalog).
func (s *Store) Router() *Router { return s.router }

// Close stops the background loops, the internal port and every group.
// Close does not leave the cluster; call Leave first for a graceful exit.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.stopping.Load() { // a graceful stop: members' writes in flight arrive first (transport.Quiet)
			s.rpc.quiet.Wait(200*time.Millisecond, 2*time.Second)
		}
		s.stopOnce.Do(func() { close(s.stop) })
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := s.rpc.srv.Shutdown(ctx); err != nil {
			// An RPC still running (a scan stream blocked on a slow reader)
			// is cut rather than left serving a closed store.
			_ = s.rpc.srv.Close()
		}
		cancel()
		// Groups first, so their transports shut down before the listener
		// they accept from goes away; then the internal port.
		err := s.groups.closeAll()
		err = errors.Join(err, s.mux.Close())
		s.client.Close()
		s.wg.Wait()
		if err != nil && !errors.Is(err, net.ErrClosed) {
			s.closeErr = err
		}
	})
	return s.closeErr
}

// NodeStatus is what a node tells others (and operators) about itself.
type NodeStatus struct {
	Name   string             `json:"name"`
	Groups []raftgroup.Status `json:"groups"`
}

// Status reports this node's groups.
func (s *Store) Status() NodeStatus {
	st := NodeStatus{Name: s.name}
	for _, g := range s.groups.sorted() {
		st.Groups = append(st.Groups, g.Status())
	}
	return st
}

// IsLeader reports whether this node leads the control group.
func (s *Store) IsLeader() bool {
	g := s.groups.control()
	return g != nil && g.IsLeader()
}

// Leader returns the control group's leader name, empty when none is known.
func (s *Store) Leader() string {
	g := s.groups.control()
	if g == nil {
		return ""
	}
	id, _ := g.Leader()
	return id
}

// WaitLeader waits until the control group has a leader, ctx ends or the
// store is closed. A closed store has no control group to wait on (Close
// empties the groups), and one closed during the wait will never see a
// leader: both are region.ErrShuttingDown at once, not a wait until ctx's deadline.
func (s *Store) WaitLeader(ctx context.Context) error {
	g := s.groups.control()
	if g == nil {
		return fmt.Errorf("wait for leader: %w", region.ErrShuttingDown)
	}
	wait, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-wait.Done():
		}
	}()
	for {
		if g.WaitLeader(wait, time.Hour) {
			return nil
		}
		if s.router.closed() {
			return fmt.Errorf("wait for leader: %w", region.ErrShuttingDown)
		}
		if ctx.Err() != nil {
			return raftgroup.ContextError(ctx, "wait for leader", nil)
		}
	}
}

// statusJSON is used by tests and the status RPC's clients.
func (st NodeStatus) String() string {
	b, _ := json.Marshal(st)
	return string(b)
}

// Server is one member of the control group's Raft configuration.
type Server struct {
	ID      string
	Address string
	Voter   bool
}

// Configuration returns the control group's leader (empty when unknown) and
// its members, as this node's Raft sees them.
func (s *Store) Configuration() (leader string, servers []Server, err error) {
	g := s.groups.control()
	if g == nil {
		return "", nil, region.ErrShuttingDown
	}
	conf, err := g.Configuration()
	if err != nil {
		return "", nil, err
	}
	for _, srv := range conf.Servers {
		servers = append(servers, Server{ID: string(srv.ID), Address: string(srv.Address), Voter: srv.Suffrage == raft.Voter})
	}
	leader, _ = g.Leader()
	return leader, servers, nil
}

// Ready reports whether this node can serve linearizable requests now: it
// is part of the control group, which has a leader, its copy has caught
// up with the leader's commit index (a read barrier), the partition table
// is written, and every partition group the table places here is open and
// has a leader. It is what a readiness probe asks; liveness is /livez.
func (s *Store) Ready(ctx context.Context) error {
	g0 := s.groups.control()
	if g0 == nil || s.stopping.Load() {
		return region.ErrShuttingDown
	}
	for _, g := range s.groups.sorted() {
		if err := g.Halted(); err != nil {
			return fmt.Errorf("%w: %w", region.ErrNoLeader, err)
		}
	}
	if !g0.HasState() {
		return fmt.Errorf("%w: this node has not joined a cluster yet", region.ErrNoLeader)
	}
	if id, _ := g0.Leader(); id == "" {
		return fmt.Errorf("%w: the control group has no leader", region.ErrNoLeader)
	}
	if _, err := s.router.controlRead(ctx, region.Linearizable); err != nil {
		return err
	}
	// Every partition group the table places here must be open and led:
	// a node that reported ready before its groups existed turned unready
	// again while they bootstrapped (a readiness probe flapping at start).
	t, _, ok := s.router.view.get()
	if !ok {
		return fmt.Errorf("%w: the partition table is not written yet", region.ErrNoLeader)
	}
	for i, pg := range t.Groups {
		gid := uint64(i) + 1
		if !slices.Contains(pg.Members, s.name) {
			continue
		}
		g := s.router.view.localFor(gid)
		if g == nil || !g.HasState() {
			return fmt.Errorf("%w: partition group %d, placed here, is not open yet", region.ErrNoLeader, gid)
		}
		if id, _ := g.Leader(); id == "" {
			return fmt.Errorf("%w: partition group %d, hosted here, has no leader yet", region.ErrNoLeader, gid)
		}
	}
	return nil
}
