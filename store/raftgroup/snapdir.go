package raftgroup

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// openSnapshots opens a group's snapshot store under dir (two snapshots
// kept), one that syncs each snapshot's directory (snapshotDirSyncer).
func openSnapshots(dir string, logger hclog.Logger) (raft.SnapshotStore, error) {
	fss, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, logger)
	if err != nil {
		return nil, err
	}
	return snapshotDirSyncer{FileSnapshotStore: fss, dir: snapshotsDir(dir)}, nil
}

// snapshotDirSyncer wraps raft's file snapshot store so that a finished
// snapshot's own directory is fsynced before raft learns the snapshot is
// done. hashicorp/raft (1.7.3) writes state.bin and meta.json into
// "<id>.tmp", fsyncs both files, renames the directory to "<id>" and
// fsyncs snapshots/, but never fsyncs "<id>" itself: the names state.bin
// and meta.json need not be on disk after a power cut (POSIX; ext4, XFS
// and btrfs happen to commit them with the files' fsync). Raft compacts
// its log as soon as Close returns, so a snapshot whose files vanish with
// the power would leave a member with a hole between its newest readable
// snapshot and its log, which it cannot restart from. Syncing "<id>"
// first closes that window; until then the older snapshot and the whole
// log are still there.
type snapshotDirSyncer struct {
	*raft.FileSnapshotStore
	dir string // the store's snapshots/ folder
}

// snapshotsDir is where raft.NewFileSnapshotStore(base, ...) keeps its
// snapshots.
func snapshotsDir(base string) string { return filepath.Join(base, "snapshots") }

func (s snapshotDirSyncer) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration, configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.FileSnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return &dirSyncingSink{SnapshotSink: sink, dir: filepath.Join(s.dir, sink.ID())}, nil
}

type dirSyncingSink struct {
	raft.SnapshotSink
	dir string
}

func (s *dirSyncingSink) Close() error {
	if err := s.SnapshotSink.Close(); err != nil {
		return err
	}
	return syncSnapshotDir(s.dir)
}

func syncSnapshotDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("snapshot: fsync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("snapshot: fsync %s: %w", dir, err)
	}
	return nil
}

var _ raft.SnapshotStore = snapshotDirSyncer{}
