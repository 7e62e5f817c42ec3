package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/internal/durable"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/raftgroup"
	"github.com/kvnode/kvnode/store/transport"
)

const (
	// groupDirPrefix names partition group dirs: raft/g<id>.
	groupDirPrefix = "g"
	// groupInfoFile records, in a group's dir, the cluster's P, which the
	// group's state machine needs (to generate keys that hash to the group)
	// before the partition table can be read after a restart.
	groupInfoFile = "group.json"
)

type groupInfo struct {
	ID         uint64 `json:"id"`
	Partitions int    `json:"partitions"`
}

func (s *Store) groupDir(gid uint64) string {
	return filepath.Join(s.cfg.DataDir, "raft", groupDirPrefix+strconv.FormatUint(gid, 10))
}

// openPartition opens (creating if needed) partition group gid of p groups.
func (s *Store) openPartition(gid uint64, p int) (*raftgroup.Group, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.groups[gid]; g != nil {
		return g, nil
	}
	if s.closed() {
		return nil, region.ErrShuttingDown
	}
	dir := s.groupDir(gid)
	if err := durable.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("partition group %d: %w", gid, err)
	}
	info, found, err := readGroupInfo(dir, gid)
	if err != nil {
		return nil, err
	}
	if !found {
		info = groupInfo{ID: gid, Partitions: p}
		data, err := json.Marshal(info)
		if err != nil {
			return nil, fmt.Errorf("partition group %d: %w", gid, err)
		}
		if err := durable.WriteFile(filepath.Join(dir, groupInfoFile), data, 0o640); err != nil {
			return nil, fmt.Errorf("partition group %d: %w", gid, err)
		}
	}
	ln, err := s.mux.GroupListener(gid)
	if err != nil {
		return nil, err
	}
	g, err := raftgroup.Open(raftgroup.Options{
		ID:      gid,
		Dir:     dir,
		LocalID: s.name,
		Layer:   &transport.RaftLayer{Listener: ln, Group: gid, Dialer: s.dialer},
		Addrs:   memberAddrs{s.cfg.Members},
		Raft:    s.cfg.Raft,
		FSM:     fsm.Options{KeyFilter: func(key string) bool { return partition.GroupForKey(key, info.Partitions) == gid }},
		Logger:  s.logger,
		Confirm: s.confirmLeadership,
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	s.groups[gid] = g
	s.logger.Info("partition group opened", "group", gid)
	return g, nil
}

// openExistingPartitions reopens, at start, every partition group that has
// a dir: the node hosted it before and may still be a member, whatever
// group 0 (which catches up only once it has a leader) says yet. A damaged
// group.json stops the start (readGroupInfo); an empty group dir, whose
// creation a crash cut short, waits for the table to open it; the remains
// of a deletion a crash cut short are deleted.
func (s *Store) openExistingPartitions() error {
	raftDir := filepath.Join(s.cfg.DataDir, raftDirName)
	entries, err := os.ReadDir(raftDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), groupDirPrefix) {
			continue
		}
		if strings.HasSuffix(e.Name(), droppedSuffix) {
			if err := os.RemoveAll(filepath.Join(raftDir, e.Name())); err != nil {
				return fmt.Errorf("delete the dropped partition group dir %s: %w", e.Name(), err)
			}
			s.logger.Info("deleted the rest of a dropped partition group", "dir", e.Name())
			continue
		}
		gid, err := strconv.ParseUint(strings.TrimPrefix(e.Name(), groupDirPrefix), 10, 64)
		if err != nil || gid == controlGroup {
			continue
		}
		info, found, err := readGroupInfo(s.groupDir(gid), gid)
		if err != nil {
			return err
		}
		if !found {
			s.logger.Info("an empty partition group dir: its creation was cut short; the partition table reopens it if this node hosts the group", "dir", e.Name())
			continue
		}
		if _, err := s.openPartition(gid, info.Partitions); err != nil {
			return err
		}
	}
	return nil
}

// dropPartition closes a group this node no longer hosts and deletes its
// data: the group's committed configuration no longer has this node.
func (s *Store) dropPartition(g *raftgroup.Group) {
	s.mu.Lock()
	if s.groups[g.ID()] != g {
		s.mu.Unlock()
		return
	}
	delete(s.groups, g.ID())
	s.mu.Unlock()
	if err := g.Close(); err != nil {
		s.logger.Warn("closing a dropped partition group", "group", g.ID(), "error", err)
	}
	// Rename, then delete: a crash in the middle of the deletion must not
	// leave a group dir with some of its files (group.json, say) gone.
	dir := s.groupDir(g.ID())
	dropped := dir + droppedSuffix
	if err := os.RemoveAll(dropped); err != nil {
		s.logger.Warn("deleting a dropped partition group", "group", g.ID(), "error", err)
	}
	if err := os.Rename(dir, dropped); err != nil {
		s.logger.Warn("deleting a dropped partition group", "group", g.ID(), "error", err)
	} else if err := durable.SyncDir(filepath.Dir(dir)); err != nil {
		s.logger.Warn("deleting a dropped partition group", "group", g.ID(), "error", err)
	} else if err := os.RemoveAll(dropped); err != nil {
		s.logger.Warn("deleting a dropped partition group", "group", g.ID(), "error", err)
	}
	s.logger.Info("partition group dropped: it moved to other members", "group", g.ID())
}
