package store

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/internal/durable"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/datadir"
	"github.com/kvnode/kvnode/store/raftgroup"
	"github.com/kvnode/kvnode/store/raftlog"
	"github.com/kvnode/kvnode/store/transport"
)

// groupSet is the Raft groups open on this node and their directories:
// it opens the control group at start, reopens the partition groups the
// node hosted before, opens the ones the table places here, and closes
// and deletes the ones that moved away (package reconcile decides when).
type groupSet struct {
	dataDir string
	self    string
	mux     *transport.Mux
	dialer  *transport.Dialer
	members Membership
	raft    raftgroup.Config
	logs    *raftlog.Store // every group's Raft log
	logger  *slog.Logger
	confirm raftgroup.ConfirmFunc
	observe func(gid uint64) raftgroup.Observer // nil: none

	mu     sync.RWMutex
	m      map[uint64]*raftgroup.Group
	closed bool
}

// formats is the newest replicated format every member reads.
func (gs *groupSet) formats() int { return cluster.MinFormats(gs.members.Members()) }

// dir is group gid's directory: raft/g<id>.
func (gs *groupSet) dir(gid uint64) string {
	return datadir.GroupDir(gs.dataDir, gid)
}

// control is the control group, nil once closed.
func (gs *groupSet) control() *raftgroup.Group { return gs.get(controlGroup) }

// get is group gid, nil when this node does not host it.
func (gs *groupSet) get(gid uint64) *raftgroup.Group {
	gs.mu.RLock()
	defer gs.mu.RUnlock()
	return gs.m[gid]
}

// sorted returns the groups hosted here, by id.
func (gs *groupSet) sorted() []*raftgroup.Group {
	gs.mu.RLock()
	defer gs.mu.RUnlock()
	out := make([]*raftgroup.Group, 0, len(gs.m))
	for _, g := range gs.m {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *raftgroup.Group) int { return cmp.Compare(a.ID(), b.ID()) })
	return out
}

// open opens group gid in dir with fo; the caller holds mu.
func (gs *groupSet) open(gid uint64, dir string, fo fsm.Options) (*raftgroup.Group, error) {
	ln, err := gs.mux.GroupListener(gid)
	if err != nil {
		return nil, err
	}
	var obs raftgroup.Observer
	if gs.observe != nil {
		obs = gs.observe(gid)
	}
	g, err := raftgroup.Open(raftgroup.Options{
		ID:      gid,
		Dir:     dir,
		LocalID: gs.self,
		Layer:   &transport.RaftLayer{Listener: ln, Group: gid, Dialer: gs.dialer},
		Addrs:   memberAddrs(gs.members),
		Raft:    gs.raft,
		Logs:    gs.logs.Group(gid),
		FSM:     fo,
		Logger:  gs.logger,
		Confirm: gs.confirm,
		Observe: obs,
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	gs.m[gid] = g
	return g, nil
}

// openControl opens the Raft log and the control group, at start.
func (gs *groupSet) openControl() error {
	if err := durable.MkdirAll(filepath.Join(gs.dataDir, datadir.RaftDir), 0o750); err != nil {
		return err
	}
	logs, err := raftlog.Open(datadir.WALPath(gs.dataDir), raftlog.Options{})
	if err != nil {
		return err
	}
	gs.mu.Lock()
	defer gs.mu.Unlock()
	gs.logs = logs
	if _, err := gs.open(controlGroup, gs.dir(controlGroup), fsm.Options{Formats: gs.formats}); err != nil {
		_ = logs.Close()
		gs.logs = nil
		return err
	}
	return nil
}

// closeAll closes every group; nothing opens afterwards.
func (gs *groupSet) closeAll() error {
	gs.mu.Lock()
	groups := gs.m
	gs.m = map[uint64]*raftgroup.Group{}
	gs.closed = true
	gs.mu.Unlock()
	var err error
	for _, g := range groups {
		err = errors.Join(err, g.Close())
	}
	if gs.logs != nil {
		err = errors.Join(err, gs.logs.Close())
	}
	return err
}

// openPartition opens (creating if needed) partition group gid of p groups.
func (gs *groupSet) openPartition(gid uint64, p int) (*raftgroup.Group, error) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if g := gs.m[gid]; g != nil {
		return g, nil
	}
	if gs.closed {
		return nil, region.ErrShuttingDown
	}
	dir := gs.dir(gid)
	if err := durable.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("partition group %d: %w", gid, err)
	}
	info, found, err := datadir.ReadGroupInfo(dir, gid)
	if err != nil {
		return nil, err
	}
	if !found {
		info = datadir.GroupInfo{ID: gid, Partitions: p}
		if err := datadir.WriteGroupInfo(dir, info); err != nil {
			return nil, err
		}
	}
	g, err := gs.open(gid, dir, fsm.Options{Formats: gs.formats, KeyFilter: func(key string) bool { return partition.GroupForKey(key, info.Partitions) == gid }})
	if err != nil {
		return nil, err
	}
	gs.logger.Info("partition group opened", "group", gid)
	return g, nil
}

// openExisting reopens, at start, every partition group that has
// a dir: the node hosted it before and may still be a member, whatever
// group 0 (which catches up only once it has a leader) says yet. A damaged
// group.json stops the start (datadir.ReadGroupInfo); an empty group dir, whose
// creation a crash cut short, waits for the table to open it; the remains
// of a deletion a crash cut short are deleted.
func (gs *groupSet) openExisting() error {
	gids, removed, err := datadir.PartitionDirs(gs.dataDir)
	for _, dir := range removed {
		gs.logger.Info("deleted the rest of a dropped partition group", "dir", dir)
	}
	if err != nil {
		return err
	}
	// A log without a group dir is the rest of a drop a crash cut short
	// (the log goes first): it goes too, so the group starts empty if it
	// comes back.
	for _, gid := range gs.logs.Groups() {
		if gid != controlGroup && !slices.Contains(gids, gid) {
			if err := gs.logs.Drop(gid); err != nil {
				return err
			}
			gs.logger.Info("deleted the log of a dropped partition group", "group", gid)
		}
	}
	for _, gid := range gids {
		info, found, err := datadir.ReadGroupInfo(gs.dir(gid), gid)
		if err != nil {
			return err
		}
		if !found {
			gs.logger.Info("an empty partition group dir: its creation was cut short; the partition table reopens it if this node hosts the group", "dir", gs.dir(gid))
			continue
		}
		if _, err := gs.openPartition(gid, info.Partitions); err != nil {
			return err
		}
	}
	return nil
}

// drop closes a group this node no longer hosts and deletes its
// data: the group's committed configuration no longer has this node.
func (gs *groupSet) drop(g *raftgroup.Group) {
	gs.mu.Lock()
	if gs.m[g.ID()] != g {
		gs.mu.Unlock()
		return
	}
	delete(gs.m, g.ID())
	gs.mu.Unlock()
	if err := g.Close(); err != nil {
		gs.logger.Warn("closing a dropped partition group", "group", g.ID(), "error", err)
	}
	// The log first: a crash before the dir goes leaves a group dir
	// without a log, which reopens as an empty replica the table then
	// drops again; the other order could leave a log that a group placed
	// here later would start from.
	if err := gs.logs.Drop(g.ID()); err != nil {
		gs.logger.Warn("deleting a dropped partition group's log", "group", g.ID(), "error", err)
		return
	}
	if err := datadir.Drop(gs.dir(g.ID())); err != nil {
		gs.logger.Warn("deleting a dropped partition group", "group", g.ID(), "error", err)
	}
	gs.logger.Info("partition group dropped: it moved to other members", "group", g.ID())
}
