package backup

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/store/datadir"
	"github.com/kvnode/kvnode/store/raftlog"
)

// RecoverOptions says which stopped member's data dir to recover.
type RecoverOptions struct {
	DataDir string
	// InternalAddr, when set, is the address the configuration records
	// for the member; by default the one the control group's last
	// configuration had for it.
	InternalAddr string
	Logger       *slog.Logger
}

// Recover rewrites the Raft state of every group the stopped member on
// o.DataDir holds so that it starts as the only voter of each (as
// hashicorp/raft's RecoverCluster does, here over the member-wide log):
// each group's newest snapshot is read and every entry of its log after
// it applied — committed or not, since nobody is left to say which were
// — and the result becomes the group's snapshot, with a configuration of
// this member alone, and its log is emptied. The partition table then
// names this member alone for the groups it held; the others are lost
// and start over empty. It refuses a data dir a running member holds.
func Recover(o RecoverOptions) (*Report, error) {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	self, err := datadir.Owner(o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	if _, err := os.Stat(datadir.GroupDir(o.DataDir, 0)); err != nil {
		return nil, fmt.Errorf("recover: %s holds no control group: %w", o.DataDir, err)
	}
	// Recover reads the log where this build's format keeps it: a dir of
	// an older format (entries still in each group's raft.db) is upgraded
	// by a start of this build first; a newer one is not this build's to
	// rewrite.
	if format, _, err := datadir.CheckFormat(o.DataDir); err != nil {
		return nil, fmt.Errorf("recover refused: %w", err)
	} else if format != datadir.Format {
		return nil, fmt.Errorf("recover refused: %s records data dir format %d, this build's is %d: start the member once with this build (it upgrades the dir in place), stop it, then recover", o.DataDir, format, datadir.Format)
	}
	// The control group's stable store is locked while a member runs: a
	// clear refusal before anything is read or changed.
	st, err := openStable(filepath.Join(datadir.GroupDir(o.DataDir, 0), raftDBFile))
	if err != nil {
		return nil, fmt.Errorf("recover refused: %w", err)
	}
	_ = st.Close()
	gids, _, err := datadir.PartitionDirs(o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	p := 0
	held := []uint64{0}
	for _, gid := range gids {
		info, found, err := datadir.ReadGroupInfo(datadir.GroupDir(o.DataDir, gid), gid)
		if err != nil {
			return nil, fmt.Errorf("recover: %w", err)
		}
		if found {
			held, p = append(held, gid), info.Partitions
		}
	}
	slices.Sort(held)
	logs, err := raftlog.Open(datadir.WALPath(o.DataDir), raftlog.Options{})
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	defer logs.Close()
	states := make([]replayed, len(held))
	for i, gid := range held {
		if states[i], err = replay(o.DataDir, logs, gid, p); err != nil {
			return nil, fmt.Errorf("recover: group %d: %w", gid, err)
		}
	}
	addr := o.InternalAddr
	if addr == "" {
		for _, srv := range states[0].conf.Servers {
			if string(srv.ID) == self {
				addr = string(srv.Address)
			}
		}
		if addr == "" {
			return nil, fmt.Errorf("recover: the control group's configuration has no address for %s: give --internal-addr", self)
		}
	}
	// Every group's state must make a snapshot before the first one is
	// written: a failure leaves the data dir as it was.
	for i, gid := range held {
		snap, err := states[i].f.Snapshot()
		if err != nil {
			return nil, fmt.Errorf("recover refused, nothing changed: group %d: %w", gid, err)
		}
		snap.Release()
	}
	rep := &Report{Member: self}
	_, lost, err := claimTable(states[0].f, states[0].term, self, held)
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	rep.Lost = lost
	s := &seed{dataDir: o.DataDir, logs: logs, self: self, addr: addr}
	for i, gid := range held {
		r := states[i]
		if err := s.group(gid, r.f, r.term); err != nil {
			return nil, fmt.Errorf("recover: %w", err)
		}
		var n int64
		for _, rs := range r.f.RegionSizes() {
			n += int64(rs.Entries)
		}
		rep.Held = append(rep.Held, HeldGroup{ID: gid, Index: r.f.AppliedIndex(), Term: r.term, Entries: n})
		logger.Info("recover: group now has this member as its only voter", "group", gid, "index", r.f.AppliedIndex(),
			"term", r.term, "entries", n, "replayed", r.replayed, "was", configString(r.conf))
	}
	if len(lost) > 0 {
		logger.Warn("recover: partition groups this member did not host are lost and start over empty", "groups", lost)
	}
	return rep, nil
}

// replayed is a group's state rebuilt from its snapshot and log.
type replayed struct {
	f        *fsm.FSM
	term     uint64             // the term of the last entry applied
	conf     raft.Configuration // the latest configuration found
	replayed int                // log entries applied after the snapshot
}

// replay rebuilds group gid's state: its newest snapshot, then every
// entry of its log after it.
func replay(dataDir string, logs *raftlog.Store, gid uint64, p int) (replayed, error) {
	out := replayed{f: partitionFSM(gid, p)}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(datadir.GroupDir(dataDir, gid), 2, hclog.NewNullLogger())
	if err != nil {
		return out, err
	}
	list, err := snaps.List()
	if err != nil {
		return out, err
	}
	var index uint64
	if len(list) > 0 {
		meta, rc, err := snaps.Open(list[0].ID)
		if err != nil {
			return out, fmt.Errorf("open snapshot %s: %w", list[0].ID, err)
		}
		if err := out.f.Restore(rc); err != nil {
			return out, fmt.Errorf("snapshot %s: %w", meta.ID, err)
		}
		index, out.term, out.conf = meta.Index, meta.Term, meta.Configuration
	}
	gl := logs.Group(gid)
	first, err := gl.FirstIndex()
	if err != nil {
		return out, err
	}
	last, err := gl.LastIndex()
	if err != nil {
		return out, err
	}
	for i := max(first, index+1); last > 0 && i <= last; i++ {
		var e raft.Log
		if err := gl.GetLog(i, &e); err != nil {
			return out, fmt.Errorf("log entry %d: %w", i, err)
		}
		switch e.Type {
		case raft.LogCommand:
			out.f.Apply(&e)
			if h := out.f.Halted(); h != nil {
				return out, h
			}
		case raft.LogConfiguration:
			out.conf = raft.DecodeConfiguration(e.Data)
			out.f.Apply(&e) // moves the applied index on
		default:
			out.f.Apply(&e)
		}
		out.term = e.Term
		out.replayed++
	}
	if out.f.AppliedIndex() == 0 && out.term == 0 {
		return out, errors.New("no snapshot and no log: the group holds nothing to recover")
	}
	return out, nil
}

// configString lists a configuration's servers for a log line.
func configString(c raft.Configuration) []string {
	out := make([]string, 0, len(c.Servers))
	for _, s := range c.Servers {
		out = append(out, fmt.Sprintf("%s(%s)", s.ID, s.Suffrage))
	}
	return out
}
