package backup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/internal/durable"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/store/catalog"
	"github.com/kvnode/kvnode/store/datadir"
	"github.com/kvnode/kvnode/store/raftlog"
)

// What restore and recover share: both end with a data dir whose member
// is the only voter of every group it holds, so that it starts alone,
// elects itself in each, and lets the cluster re-grow around it as fresh
// members join (the control group's reconciliation adds them, the
// partition table's planner gives them replicas, each partition group's
// leader adds them and they catch up by Raft snapshot).

// seed holds what seeding the groups of one data dir needs.
type seed struct {
	dataDir string
	logs    *raftlog.Store
	self    string // the member's name: its Raft server ID
	addr    string // its internal address, as the configuration records it
}

// raftDBFile is a group's term-and-vote store in its dir (package
// raftgroup opens it; raft-boltdb).
const raftDBFile = "raft.db"

// keyCurrentTerm is hashicorp/raft's key for the current term in the
// stable store.
var keyCurrentTerm = []byte("CurrentTerm")

// group makes group gid's dir hold f's state, at f's applied index and
// term, as the group's newest Raft snapshot with a configuration of this
// member alone; it empties the group's log (its entries are in f, or
// were never committed by the new configuration) and raises the stored
// term to term if it is lower, so the member's first election is in a
// later term than anything it holds.
func (s *seed) group(gid uint64, f *fsm.FSM, term uint64) error {
	dir := datadir.GroupDir(s.dataDir, gid)
	if err := durable.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("group %d: %w", gid, err)
	}
	if err := raiseTerm(filepath.Join(dir, raftDBFile), term); err != nil {
		return fmt.Errorf("group %d: %w", gid, err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.NewNullLogger())
	if err != nil {
		return fmt.Errorf("group %d: open snapshot store: %w", gid, err)
	}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(s.addr))
	defer trans.Close()
	conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(s.self), Address: raft.ServerAddress(s.addr)}}}
	index := f.AppliedIndex()
	sink, err := snaps.Create(raft.SnapshotVersionMax, index, term, conf, index, trans)
	if err != nil {
		return fmt.Errorf("group %d: create snapshot: %w", gid, err)
	}
	snap, err := f.Snapshot()
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("group %d: %w", gid, err)
	}
	defer snap.Release()
	if err := snap.Persist(sink); err != nil {
		return fmt.Errorf("group %d: %w", gid, err)
	}
	// hashicorp/raft fsyncs the files and snapshots/, not the snapshot's
	// own dir (see raftgroup's snapdir.go).
	if err := durable.SyncDir(filepath.Join(dir, "snapshots", sink.ID())); err != nil {
		return fmt.Errorf("group %d: %w", gid, err)
	}
	gl := s.logs.Group(gid)
	first, err := gl.FirstIndex()
	if err != nil {
		return fmt.Errorf("group %d: %w", gid, err)
	}
	last, err := gl.LastIndex()
	if err != nil {
		return fmt.Errorf("group %d: %w", gid, err)
	}
	if last > 0 {
		if err := gl.DeleteRange(first, last); err != nil {
			return fmt.Errorf("group %d: empty the log: %w", gid, err)
		}
	}
	return nil
}

// raiseTerm opens the stable store at path (creating it), failing fast
// when a running member holds it, and raises its current term to term.
func raiseTerm(path string, term uint64) error {
	st, err := openStable(path)
	if err != nil {
		return err
	}
	defer st.Close()
	cur, err := st.GetUint64(keyCurrentTerm)
	if err != nil && err.Error() != "not found" {
		return fmt.Errorf("read the current term in %s: %w", path, err)
	}
	if cur < term {
		if err := st.SetUint64(keyCurrentTerm, term); err != nil {
			return fmt.Errorf("record term %d in %s: %w", term, path, err)
		}
	}
	return nil
}

// ErrInUse is a data dir a running member holds.
var ErrInUse = errors.New("the data dir is in use")

// openStable opens a group's raft.db as raftgroup does, but gives up
// after a second: a running member holds its file lock.
func openStable(path string) (*raftboltdb.BoltStore, error) {
	st, err := raftboltdb.New(raftboltdb.Options{Path: path, BoltOptions: &bbolt.Options{
		Timeout: time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType,
	}})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s is locked by a running kvnode; stop it first", ErrInUse, path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return st, nil
}

// claimTable rewrites the partition table in the control group's state
// f so that self alone hosts every partition group in held (bootstrapped:
// its state is in the seeded snapshot), and the others, whose data is
// lost, start over empty: no member, not bootstrapped, so the planner
// places them like new groups and their first member bootstraps them. It
// is applied as the command any member would commit, at the index after
// f's, so f's applied index moves on by one. It returns the lost groups.
func claimTable(f *fsm.FSM, term uint64, self string, held []uint64) (partition.Table, []uint64, error) {
	raw, version, ok := f.Meta(catalog.TableKey)
	if !ok {
		return partition.Table{}, nil, nil // the cluster never got as far as a table
	}
	t, err := partition.Decode(raw)
	if err != nil {
		return t, nil, fmt.Errorf("the partition table: %w", err)
	}
	t = t.Clone()
	var lost []uint64
	for i := range t.Groups {
		g := &t.Groups[i]
		if slices.Contains(held, g.ID) {
			g.Members, g.Bootstrapper, g.Bootstrapped = []string{self}, self, true
			continue
		}
		g.Members, g.Bootstrapper, g.Bootstrapped = []string{}, "", false
		lost = append(lost, g.ID)
	}
	enc, err := partition.Encode(t)
	if err != nil {
		return t, nil, err
	}
	cmd := codec.Command{Op: codec.OpSetMeta, MetaKey: catalog.TableKey, MetaVersion: version, MetaValue: enc}
	res := f.Apply(&raft.Log{Index: f.AppliedIndex() + 1, Term: term, Type: raft.LogCommand, Data: cmd.Encode(nil)})
	if r, ok := res.(*codec.Result); !ok || r.Err != nil {
		return t, nil, fmt.Errorf("rewrite the partition table: %v", res)
	}
	return t, lost, nil
}

// partitionFSM is a state machine for partition group gid of p, with the
// key filter the store gives it (generated keys hash to the group), so
// that replaying its log decides what the member decided.
func partitionFSM(gid uint64, p int) *fsm.FSM {
	if gid == 0 {
		return fsm.New(fsm.Options{})
	}
	return fsm.New(fsm.Options{Group: gid, KeyFilter: func(key string) bool { return partition.GroupForKey(key, p) == gid }})
}

// restoreInto reads a snapshot stream into f.
func restoreInto(f *fsm.FSM, r io.Reader) error {
	return f.Restore(io.NopCloser(r))
}

// emptyDir reports whether dir is absent or empty.
func emptyDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return len(entries) == 0, nil
}
