package raftgroup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/internal/durable"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/transport"
)

// Config tunes a Raft group. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	// WatchHistory is how many change events each group's state machine
	// keeps for watches to resume from (fsm.Options.History; 0: its
	// default).
	WatchHistory int
	// HeartbeatTimeout and ElectionTimeout bound how long a follower waits
	// for the leader before starting an election; they set failover time.
	HeartbeatTimeout time.Duration
	ElectionTimeout  time.Duration
	// LeaderLeaseTimeout is how long a leader keeps leading without
	// hearing from a quorum; a partitioned leader steps down after it.
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is how long the leader waits before telling followers
	// of a new commit index when no new entries flow; it bounds how stale a
	// follower's state is when it serves a read-index read on an idle group.
	CommitTimeout time.Duration
	// MaxAppendEntries is the largest batch of entries written with one
	// fsync and sent in one AppendEntries: the group-commit size.
	MaxAppendEntries int
	// SnapshotThreshold (entries) and SnapshotInterval decide when the log
	// is compacted into a snapshot; TrailingLogs entries stay behind it so a
	// briefly lagging follower catches up from the log, not a snapshot.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64

	// WrapTransport, when set (tests only), wraps a group's transport
	// before its Raft instance gets it, so a test can decide the fate of
	// each message (store/deposed_test.go).
	WrapTransport func(gid uint64, t raft.Transport) raft.Transport
}

// DefaultConfig suits a LAN or a single machine. The timeouts were
// chosen with the chaos runs (docs/chaos.md) on a 2-core host with three
// members under load: at 500 ms heartbeat and election timeouts a killed
// leader is replaced and writes flow again in about 1.0 s at the median
// (1.3 s worst) where 1000 ms took 2.0-2.2 s, and a 60 s loaded run saw
// no election. A follower waits 0.5-1 s without hearing from the leader
// before it stands (pre-vote keeps a rejoining member from disrupting);
// the 250 ms lease makes a cut-off leader stop serving well before the
// others can elect a new one.
func DefaultConfig() Config {
	return Config{
		WatchHistory:       history.Default,
		HeartbeatTimeout:   500 * time.Millisecond,
		ElectionTimeout:    500 * time.Millisecond,
		LeaderLeaseTimeout: 250 * time.Millisecond,
		CommitTimeout:      10 * time.Millisecond,
		MaxAppendEntries:   512,
		SnapshotThreshold:  16384,
		SnapshotInterval:   60 * time.Second,
		TrailingLogs:       10240,
	}
}

// WithDefaults is c with every zero field set to DefaultConfig's value.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	c.HeartbeatTimeout = orDefault(c.HeartbeatTimeout, d.HeartbeatTimeout)
	c.ElectionTimeout = orDefault(c.ElectionTimeout, d.ElectionTimeout)
	c.LeaderLeaseTimeout = orDefault(c.LeaderLeaseTimeout, d.LeaderLeaseTimeout)
	c.CommitTimeout = orDefault(c.CommitTimeout, d.CommitTimeout)
	c.MaxAppendEntries = orDefault(c.MaxAppendEntries, d.MaxAppendEntries)
	c.SnapshotThreshold = orDefault(c.SnapshotThreshold, d.SnapshotThreshold)
	c.SnapshotInterval = orDefault(c.SnapshotInterval, d.SnapshotInterval)
	c.TrailingLogs = orDefault(c.TrailingLogs, d.TrailingLogs)
	return c
}

// orDefault is v, or d when v is the zero value.
func orDefault[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}

// stableStore is the group's Raft stable store (term and vote, in the log
// store's bbolt file) that drops writes once the group is closed.
// hashicorp/raft answers heartbeats on the transport's connection
// goroutines, which Shutdown does not wait for: a heartbeat from a later
// term that arrived just before Shutdown saves the new term after it, and
// raft panics when that save fails, which it did once the bbolt file was
// closed ("failed to save current term: database not open", a store test's
// cleanup took the whole test binary down). Dropping that save is safe: the
// group is gone, and a heartbeat never casts a vote, so a restarted member
// that comes back with the older term cannot vote twice in the later one.
type stableStore struct {
	raft.StableStore
	mu     sync.RWMutex // writes hold it shared; close waits for them
	closed bool
}

func (s *stableStore) Set(key, val []byte) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil
	}
	return s.StableStore.Set(key, val)
}

func (s *stableStore) SetUint64(key []byte, val uint64) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil
	}
	return s.StableStore.SetUint64(key, val)
}

// close makes later writes no-ops, once the writes under way are done.
func (s *stableStore) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// logCacheEntries is how many of the latest log entries each group keeps
// decoded in memory (see Open), and the most bytes of entry data they
// may hold (the newest entry is kept whatever its size).
const (
	logCacheEntries = 512
	logCacheBytes   = 4 << 20
)

// Group is one Raft group hosted on this node: its state machine, log and
// snapshot stores, transport, and the read-index machinery.
type Group struct {
	id     uint64
	raft   *raft.Raft
	fsm    *fsm.FSM
	trans  *raft.NetworkTransport
	log    raft.LogStore         // the group's log (Options.Logs)
	logs   *raftboltdb.BoltStore // the stable store's file (term and vote)
	stable *stableStore
	logger *slog.Logger

	reads  *ReadIndexer
	rounds indexRounds // a follower's asks for the leader's read index
	batch  *batcher
	// staging admits one staged command at a time (stage.go).
	staging chan struct{}
	// readyTerm is the term in which this node, as leader, completed a
	// barrier: from then on its FSM holds every entry committed by earlier
	// leaders, so it may serve linearizable reads.
	readyTerm atomic.Uint64

	observer *raft.Observer
	obsCh    chan raft.Observation
	leaderMu sync.Mutex
	changed  chan struct{} // closed and replaced whenever the leader changes
	stop     chan struct{}
	wg       sync.WaitGroup

	events Observer  // Options.Observe, nil when none
	replay *replayer // the state machine raft was given (replay.go)
}

// Options says which group to open, where, and with what.
type Options struct {
	// ID is the group's ID (0: the control group).
	ID uint64
	// Dir holds the group's log (raft.db) and snapshots; it is created
	// if needed.
	Dir string
	// LocalID is this member's Raft server ID, its name.
	LocalID string
	// Layer carries the group's Raft traffic on the internal port.
	Layer raft.StreamLayer
	// Addrs says where each member is now (the store's gossip view).
	Addrs raft.ServerAddressProvider
	Raft  Config
	// Logs is the group's Raft log (package raftlog: one file shared by
	// every group of the member). The group's dir keeps its term and vote;
	// entries an older layout kept there move into Logs when the group
	// opens.
	Logs raft.LogStore
	// FSM configures the state machine; OnHalt and Group are set here.
	FSM    fsm.Options
	Logger *slog.Logger
	// Confirm is the read-index round's leadership check (see ConfirmFunc).
	Confirm ConfirmFunc
	// Observe, when set, is told what the group's Raft does (metrics).
	Observe Observer
}

// Open opens (or creates) the group's stores under o.Dir and starts its
// Raft instance. It does not bootstrap.
func Open(o Options) (*Group, error) {
	gid, dir, logger, fo, confirm := o.ID, o.Dir, o.Logger, o.FSM, o.Confirm
	if o.Logs == nil {
		return nil, fmt.Errorf("raft group %d: no log store", gid)
	}
	if err := durable.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("raft group %d: %w", gid, err)
	}
	logs, err := raftboltdb.New(raftboltdb.Options{
		Path: filepath.Join(dir, "raft.db"),
		// Another kvnode on the same data dir holds the file lock: fail fast
		// with a clear error instead of hanging.
		BoltOptions: &bbolt.Options{
			Timeout: 2 * time.Second,
			// Do not write the freelist on every commit (it grows with the
			// log's churn); rebuild it on open instead. Consul runs
			// raft-boltdb this way: fewer bytes per fsync, same durability.
			NoFreelistSync: true,
			FreelistType:   bbolt.FreelistMapType,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("raft group %d: open log store %s (is another kvnode using this data dir?): %w", gid, filepath.Join(dir, "raft.db"), err)
	}
	// raft's lines name the group: a member runs several.
	hl := newHCLog(logger.With("group", gid), "raft")
	snaps, err := openSnapshots(dir, hl)
	if err != nil {
		_ = logs.Close()
		return nil, fmt.Errorf("raft group %d: open snapshot store: %w", gid, err)
	}
	// bbolt fsyncs raft.db and the snapshot store its snapshots, but
	// neither the directory entries they create here.
	if err := durable.SyncDir(dir); err != nil {
		_ = logs.Close()
		return nil, fmt.Errorf("raft group %d: %w", gid, err)
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: o.Layer,
		// Dial members where gossip says they are now, never at the
		// address the configuration last recorded (see transport.MemberAddrs).
		ServerAddressProvider: o.Addrs,
		MaxPool:               4,
		Timeout:               InternalTimeout,
		Logger:                hl,
		// Pipelined replication with room for 16 requests in flight, not
		// the default 2. hashicorp/raft 1.7.3's pipeline can deadlock:
		// when a follower answers Success=false, the pipeline's decoder
		// returns while the sender, picking at random between "decoder
		// done" and "more to send", may send again and park handing the
		// request to the decoder, which is parked handing back the last
		// answer. With the default 2 the channels between them are
		// unbuffered and one unlucky pick parks the sender for good: that
		// follower never receives another entry (heartbeats still flow)
		// and Shutdown waits for ever; a store test's cleanup hung 9
		// minutes there (stack: pipelineSend -> netPipeline.AppendEntries).
		// With 16 the sender would have to lose the pick ~29 times in a
		// row. Turning pipelining off (1) also avoids it, but makes a data
		// race of hashicorp/raft (updateLastAppended reads the peer that an
		// address change rewrites) frequent: 2 of 6 runs of
		// TestRestartWithShuffledAddresses under -race, against 0 of 6.
		MaxRPCsInFlight: 16,
	})

	rc := o.Raft.WithDefaults()
	cfg := raft.DefaultConfig()
	cfg.LocalID = raft.ServerID(o.LocalID)
	cfg.Logger = hl
	cfg.HeartbeatTimeout = rc.HeartbeatTimeout
	cfg.ElectionTimeout = rc.ElectionTimeout
	cfg.LeaderLeaseTimeout = rc.LeaderLeaseTimeout
	cfg.CommitTimeout = rc.CommitTimeout
	cfg.MaxAppendEntries = rc.MaxAppendEntries
	cfg.BatchApplyCh = true
	cfg.SnapshotThreshold = rc.SnapshotThreshold
	cfg.SnapshotInterval = rc.SnapshotInterval
	cfg.TrailingLogs = rc.TrailingLogs
	// A member removed while it was away (dead-member timeout) must stay a
	// follower so the leader can add it back when it returns, instead of
	// shutting its Raft down for good.
	cfg.ShutdownOnRemove = false

	// A state machine that halts (fsm.Halted: an entry it cannot apply)
	// reports it here; watchHalt stops the group's Raft instance, so that
	// a halted leader hands its leadership to a healthy replica and a
	// halted follower stops acknowledging entries it does not apply.
	halts := make(chan error, 1)
	fo.Group = gid
	fo.History = rc.WatchHistory
	fo.OnHalt = func(err error) {
		select {
		case halts <- err:
		default:
		}
	}
	f := fsm.New(fo)
	// The leader reads the entry before each AppendEntries (for its term)
	// and the entries it sends from the log store. raft-boltdb decodes a
	// stored entry with go-msgpack, which reads a byte slice in 256 KiB
	// steps, copying all it has read at each step: quadratic, ~1 s of
	// memmove for a 100 MiB entry, on every replication round that touched
	// it. That stalled a leader past its lease after each large write, for
	// as long as the entry was the last one (issue 16's 100 MiB write lost
	// leadership every time). A cache of the latest entries (as Consul
	// keeps) serves those reads from memory, bounded in bytes (logcache.go).
	if err := moveLogs(logs, o.Logs); err != nil {
		_ = trans.Close()
		_ = logs.Close()
		return nil, fmt.Errorf("raft group %d: %w", gid, err)
	}
	rfsm, rlogs, rsnaps, started := observed(o.Observe, f, o.Logs, snaps)
	glog := logger.With("group", gid)
	rsnaps = loggedSnapshots{SnapshotStore: rsnaps, logger: glog}
	rfsm = loggedRestore{BatchingFSM: rfsm.(raft.BatchingFSM), logger: glog, applied: f.AppliedIndex}
	// The newest snapshot is restored here rather than by raft, and the
	// log's committed tail replayed after it, both while raft starts
	// (replay.go).
	rep := newReplayer(rfsm.(raft.BatchingFSM), f, o.Logs)
	snap, snapData, restored, err := rep.openNewest(rsnaps, glog)
	if err != nil {
		_ = trans.Close()
		_ = logs.Close()
		return nil, fmt.Errorf("raft group %d: restore: %w", gid, err)
	}
	cfg.NoSnapshotRestoreOnStart = restored
	startSnaps := &startSnapshots{SnapshotStore: rsnaps}
	stop := make(chan struct{})
	if restored {
		var index uint64
		if snap != nil {
			index = snap.Index
		}
		first, last := rep.plan(index)
		if first <= last {
			at, err := rep.prepare(o.Logs, first, last, snap)
			if err != nil {
				if snapData != nil {
					_ = snapData.Close()
				}
				_ = trans.Close()
				_ = logs.Close()
				return nil, fmt.Errorf("raft group %d: replay: %w", gid, err)
			}
			if at != nil {
				startSnaps.at.Store(at)
			} else {
				first, last = 1, 0
			}
		}
		if snapData != nil || first <= last {
			rep.hold()
			go rep.start(snap, snapData, o.Logs, first, last, stop, glog)
		}
	}
	cached := newLogCache(rlogs, logCacheEntries, logCacheBytes)
	stable := &stableStore{StableStore: logs}
	var rt raft.Transport = trans
	if rc.WrapTransport != nil {
		rt = rc.WrapTransport(gid, trans)
	}
	r, err := raft.NewRaft(cfg, rep, cached, stable, startSnaps, rt)
	startSnaps.started()
	if err != nil {
		close(stop)
		rep.wait()
		_ = trans.Close()
		_ = logs.Close()
		return nil, fmt.Errorf("raft group %d: start: %w", gid, err)
	}
	started(r)
	g := &Group{
		id:      gid,
		raft:    r,
		fsm:     f,
		trans:   trans,
		log:     o.Logs,
		logs:    logs,
		stable:  stable,
		logger:  glog,
		changed: make(chan struct{}),
		stop:    stop,
		obsCh:   make(chan raft.Observation, 16),
		staging: make(chan struct{}, 1),
		events:  o.Observe,
		replay:  rep,
	}
	g.reads = NewReadIndexer(g, confirm)
	g.batch = newBatcher(g)
	g.observer = raft.NewObserver(g.obsCh, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(g.observer)
	g.wg.Add(2)
	go g.watchLeader()
	go g.watchHalt(halts)
	return g, nil
}

// watchHalt stops the group's Raft instance when its state machine halts.
// The node stays up and keeps serving its other groups; the group's
// requests go to other replicas, /readyz names the group and the entry
// (Ready), and the error is logged here once.
func (g *Group) watchHalt(halts <-chan error) {
	defer g.wg.Done()
	select {
	case err := <-halts:
		g.logger.Error("raft group stopped on this member: its state machine cannot apply a committed entry "+
			"(the node keeps serving its other groups; the group's other replicas serve it if they can apply the entry)",
			"error", err)
		if err := g.raft.Shutdown().Error(); err != nil {
			g.logger.Error("stop the halted group's raft instance", "error", err)
		}
	case <-g.stop:
	}
}

// Halted returns why the group's state machine stopped on this node, nil
// while it runs (see fsm.Halted). A halted replica serves nothing.
func (g *Group) Halted() error { return g.fsm.Halted() }

// watchLeader turns leader observations into a broadcast that waiting
// requests select on.
func (g *Group) watchLeader() {
	defer g.wg.Done()
	for {
		select {
		case o := <-g.obsCh:
			if lo, ok := o.Data.(raft.LeaderObservation); ok {
				// Once per change on every member: a leader elected (or
				// learnt of), or none known any more (an election began).
				if lo.LeaderID != "" {
					addr, _ := transport.SplitRaftAddr(lo.LeaderAddr)
					g.logger.Info("leader changed", "leader", string(lo.LeaderID), "term", g.raft.CurrentTerm(), "address", addr)
					if g.events != nil {
						g.events.LeaderChanged()
					}
				} else {
					g.logger.Info("leader lost", "term", g.raft.CurrentTerm())
				}
			}
			g.leaderMu.Lock()
			close(g.changed)
			g.changed = make(chan struct{})
			g.leaderMu.Unlock()
		case <-g.stop:
			return
		}
	}
}

// LeaderChanged returns a channel closed at the next leader change.
func (g *Group) LeaderChanged() <-chan struct{} {
	g.leaderMu.Lock()
	defer g.leaderMu.Unlock()
	return g.changed
}

// IsLeader reports whether this member leads the group now.
func (g *Group) IsLeader() bool { return g.raft.State() == raft.Leader }

// Leader returns the current leader's ID and internal address, empty when
// unknown. Raft learns the address from the leader's RPC headers, which
// transport.MemberAddrs tags with the leader's name; the tag is dropped here.
func (g *Group) Leader() (id, addr string) {
	a, i := g.raft.LeaderWithID()
	addr, _ = transport.SplitRaftAddr(a)
	return string(i), addr
}

// HasState reports whether this group has ever been bootstrapped or joined.
func (g *Group) HasState() bool {
	return g.raft.LastIndex() > 0
}

// Configuration returns the latest Raft configuration.
func (g *Group) Configuration() (raft.Configuration, error) {
	f := g.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return raft.Configuration{}, fmt.Errorf("raft group %d: configuration: %w", g.id, err)
	}
	return f.Configuration(), nil
}

// Close shuts the group down and releases its files.
func (g *Group) Close() error {
	g.raft.DeregisterObserver(g.observer)
	close(g.stop)
	g.wg.Wait()
	g.replay.wait()
	err := g.raft.Shutdown().Error()
	g.stable.close()
	err = errors.Join(err, g.trans.Close(), g.logs.Close())
	if err != nil {
		return fmt.Errorf("raft group %d: close: %w", g.id, err)
	}
	return nil
}

// WaitLeader waits until the group knows a leader, ctx ends or max passes.
func (g *Group) WaitLeader(ctx context.Context, max time.Duration) bool {
	t := time.NewTimer(max)
	defer t.Stop()
	for {
		ch := g.LeaderChanged()
		if id, _ := g.Leader(); id != "" {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-t.C:
			return false
		}
	}
}

// Await waits for a Raft future in a background loop, but at most timeout
// and never past stop (the store's shutdown): some futures (a leadership
// transfer cut short by Shutdown) may never resolve.
func Await(f raft.Future, timeout time.Duration, stop <-chan struct{}) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("raft operation still pending after %v", timeout)
	case <-stop:
		return raft.ErrRaftShutdown
	}
}

// InternalTimeout bounds one internal step whose caller set no deadline: a
// Raft membership, leadership or barrier operation, an address fix, a
// forwarded command's Apply, the enqueue of a batch, and a Raft RPC to a
// member (the transport's timeout). One number for all of them, so an
// operator reasons about one bound: past it a step has failed (a member
// is gone or the group has no quorum), and the loop that asked tries
// again or answers 503.
const InternalTimeout = 10 * time.Second

// name is how log lines name the group.
func (g *Group) name() string {
	if g.id == 0 {
		return "the control group"
	}
	return "partition group " + strconv.FormatUint(g.id, 10)
}

// RemoveServer removes member id from the group's configuration; this
// member must be the leader. It never removes the last voter, and removing
// a member that is not there is done at once.
func (g *Group) RemoveServer(ctx context.Context, id, reason string) error {
	if id == "" {
		return fmt.Errorf("remove server: %w: empty server id", region.ErrInvalid)
	}
	if !g.IsLeader() {
		return fmt.Errorf("remove %s: %w", id, region.ErrNotLeader)
	}
	conf, err := g.Configuration()
	if err != nil {
		return err
	}
	var found *raft.Server
	voters := 0
	for i, srv := range conf.Servers {
		if srv.Suffrage == raft.Voter {
			voters++
		}
		if string(srv.ID) == id {
			found = &conf.Servers[i]
		}
	}
	if found == nil {
		return nil
	}
	if found.Suffrage == raft.Voter && voters == 1 {
		return fmt.Errorf("refusing to remove %s: it is the last voter of group %d", id, g.id)
	}
	timeout := InternalTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	g.logger.Info("removing member from "+g.name(), "member", id, "reason", reason)
	if err := Await(g.raft.RemoveServer(raft.ServerID(id), 0, timeout), InternalTimeout, g.stop); err != nil {
		return fmt.Errorf("remove %s from group %d: %w", id, g.id, FromRaft(err))
	}
	return nil
}

// moveLogs moves the entries a group's own file (raft.db, where the log
// lived before package raftlog) still holds into to, then deletes them
// there. Interrupted, it starts again at the next open: writing an entry
// twice is harmless, and the old file keeps the entries until every one
// is durable in to.
func moveLogs(from *raftboltdb.BoltStore, to raft.LogStore) error {
	first, err := from.FirstIndex()
	if err != nil {
		return fmt.Errorf("read the old log's first index: %w", err)
	}
	last, err := from.LastIndex()
	if err != nil {
		return fmt.Errorf("read the old log's last index: %w", err)
	}
	if last == 0 {
		return nil
	}
	const chunk = 256
	for i := first; i <= last; i += chunk {
		batch := make([]*raft.Log, 0, chunk)
		for j := i; j <= min(last, i+chunk-1); j++ {
			l := new(raft.Log)
			if err := from.GetLog(j, l); err != nil {
				return fmt.Errorf("read entry %d of the old log: %w", j, err)
			}
			batch = append(batch, l)
		}
		if err := to.StoreLogs(batch); err != nil {
			return fmt.Errorf("move entries %d-%d of the old log: %w", i, i+uint64(len(batch))-1, err)
		}
	}
	if err := from.DeleteRange(first, last); err != nil {
		return fmt.Errorf("delete the moved entries from the old log: %w", err)
	}
	return nil
}
