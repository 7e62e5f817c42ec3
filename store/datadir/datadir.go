package datadir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kvnode/kvnode/internal/durable"
)

// The layout of a data dir:
//
//	format             the dir's format version (format.go), and a newline
//	node-name          the name of the member that owns the dir, and a newline
//	raft/wal/          the Raft log of every group (package store/raftlog)
//	raft/g0/           the control group: raft.db (its term and vote), snapshots/
//	raft/g<id>/        partition group id: the same, and group.json
//	raft/g<id>.dropped a partition group's dir while it is deleted
const (
	// NodeNameFile, in the data dir, holds the name of the node that owns
	// it, and a newline.
	NodeNameFile = "node-name"
	// RaftDir, in the data dir, holds the Raft groups' dirs.
	RaftDir = "raft"
	// WALDir, in RaftDir, holds the Raft log of every group.
	WALDir = "wal"
	// GroupInfoFile records, in a partition group's dir, the group's ID
	// and the cluster's P, which the group's state machine needs (to
	// generate keys that hash to the group) before the partition table can
	// be read after a restart.
	GroupInfoFile = "group.json"
	// groupDirPrefix names group dirs: raft/g<id>.
	groupDirPrefix = "g"
	// DroppedSuffix marks a partition group's dir while Drop deletes it:
	// renamed first, so that a crash in the middle of the deletion leaves a
	// dir that is plainly garbage, not a group dir with some of its files
	// gone.
	DroppedSuffix = ".dropped"
)

// WALPath is the Raft log's directory in data dir dataDir.
func WALPath(dataDir string) string { return filepath.Join(dataDir, RaftDir, WALDir) }

// GroupDir is group gid's dir in data dir dataDir.
func GroupDir(dataDir string, gid uint64) string {
	return filepath.Join(dataDir, RaftDir, groupDirPrefix+strconv.FormatUint(gid, 10))
}

// GroupInfo is what a partition group's dir records of it (group.json).
type GroupInfo struct {
	ID         uint64 `json:"id"`
	Partitions int    `json:"partitions"`
}

// ErrDamaged is a state file of the data dir that cannot be trusted:
// the node refuses to start with it.
var ErrDamaged = errors.New("damaged data dir")

// Claim creates dir and records which node owns it, refusing a data
// dir that belongs to another node name (reusing it would give this node
// another member's Raft identity and log), or whose node-name is damaged.
// A leftover node-name.tmp (a first start cut short) is removed; without
// node-name and without Raft state the dir is new and is claimed.
func Claim(dir, name string) error {
	if err := durable.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, NodeNameFile)
	data, err := durable.ReadFile(path)
	switch {
	case err == nil:
		owner, err := parseNodeName(data)
		if err != nil {
			return fmt.Errorf("%w: %s %v; it records which node owns the data dir (its Raft identity): if the dir is node N's, write N and a newline into it, otherwise start with another --data-dir",
				ErrDamaged, path, err)
		}
		if owner != name {
			return fmt.Errorf("data dir %s belongs to node %q, not %q: start with --name %s or use another --data-dir", dir, owner, name, owner)
		}
		return nil
	case errors.Is(err, fs.ErrNotExist):
		raftDir := filepath.Join(dir, RaftDir)
		if _, err := os.Stat(raftDir); err == nil {
			// node-name is written before any Raft state: it was lost.
			return fmt.Errorf("%w: %s is missing, but %s holds Raft state of an unknown node: if the dir is node N's, write N and a newline into %s, otherwise start with another --data-dir",
				ErrDamaged, path, raftDir, path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("data dir %s: %w", dir, err)
		}
		if err := durable.WriteFile(path, []byte(name+"\n"), 0o640); err != nil {
			return fmt.Errorf("record node name in %s: %w", dir, err)
		}
		return nil
	default:
		return fmt.Errorf("read %s: %w", path, err)
	}
}

// parseNodeName reads node-name's content: a name and a newline. The
// newline tells a complete file from a truncated one.
func parseNodeName(data []byte) (string, error) {
	if len(data) == 0 {
		return "", errors.New("is empty")
	}
	s := string(data)
	name, ok := strings.CutSuffix(s, "\n")
	if !ok {
		return "", fmt.Errorf("is truncated: %s does not end in a newline", quoteStart(s))
	}
	if name == "" || strings.Contains(name, "\n") || !utf8.ValidString(name) ||
		strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
		return "", fmt.Errorf("does not hold a node name: it holds %s", quoteStart(s))
	}
	return name, nil
}

// quoteStart quotes the start of a damaged file's content for a message.
func quoteStart(s string) string {
	const max = 64
	if len(s) > max {
		return fmt.Sprintf("%q...", s[:max])
	}
	return fmt.Sprintf("%q", s)
}

// ReadGroupInfo reads the group.json in dir, partition group gid's dir.
// found is false when there is none and the dir holds nothing else (a
// crash cut the group's creation short); a group.json missing beside the
// group's Raft state is damage.
func ReadGroupInfo(dir string, gid uint64) (info GroupInfo, found bool, err error) {
	path := filepath.Join(dir, GroupInfoFile)
	damaged := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s %s; it records the partition group's id and the cluster's number of partition groups P: write {\"id\":%d,\"partitions\":P} into it, or remove %s so that this node gets the group's data again from its other members",
			ErrDamaged, path, fmt.Sprintf(format, args...), gid, dir)
	}
	data, err := durable.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return GroupInfo{}, false, fmt.Errorf("partition group %d: %w", gid, err)
		}
		if len(entries) > 0 {
			return GroupInfo{}, false, damaged("is missing, but the dir holds the group's Raft state (%s)", entries[0].Name())
		}
		return GroupInfo{}, false, nil
	}
	if err != nil {
		return GroupInfo{}, false, fmt.Errorf("partition group %d: read %s: %w", gid, path, err)
	}
	if len(data) == 0 {
		return GroupInfo{}, false, damaged("is empty")
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return GroupInfo{}, false, damaged("is not valid JSON (%v): it holds %s", err, quoteStart(string(data)))
	}
	switch {
	case info.ID != gid:
		return GroupInfo{}, false, damaged("records group %d, not %d", info.ID, gid)
	case info.Partitions < 1:
		return GroupInfo{}, false, damaged("records %d partition groups, want at least 1", info.Partitions)
	case uint64(info.Partitions) < gid:
		return GroupInfo{}, false, damaged("records %d partition groups, too few to have group %d", info.Partitions, gid)
	}
	return info, true, nil
}

// WriteGroupInfo records info in dir, a partition group's dir, durably.
func WriteGroupInfo(dir string, info GroupInfo) error {
	data, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("partition group %d: %w", info.ID, err)
	}
	if err := durable.WriteFile(filepath.Join(dir, GroupInfoFile), data, 0o640); err != nil {
		return fmt.Errorf("partition group %d: %w", info.ID, err)
	}
	return nil
}

// PartitionDirs lists, in data dir dataDir, the IDs of the partition
// groups that have a dir, after deleting the remains of deletions a crash
// cut short (each named in removed).
func PartitionDirs(dataDir string) (gids []uint64, removed []string, err error) {
	raftDir := filepath.Join(dataDir, RaftDir)
	entries, err := os.ReadDir(raftDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), groupDirPrefix) {
			continue
		}
		if strings.HasSuffix(e.Name(), DroppedSuffix) {
			if err := os.RemoveAll(filepath.Join(raftDir, e.Name())); err != nil {
				return nil, nil, fmt.Errorf("delete the dropped partition group dir %s: %w", e.Name(), err)
			}
			removed = append(removed, e.Name())
			continue
		}
		gid, err := strconv.ParseUint(strings.TrimPrefix(e.Name(), groupDirPrefix), 10, 64)
		if err != nil || gid == 0 {
			continue // not a group dir, or the control group's
		}
		gids = append(gids, gid)
	}
	return gids, removed, nil
}

// Drop deletes dir, a partition group's dir, so that a crash in the middle
// never leaves a group dir with some of its files (group.json, say) gone:
// it is renamed first, the rename made durable, then deleted (what a
// crash leaves, PartitionDirs deletes).
func Drop(dir string) error {
	dropped := dir + DroppedSuffix
	if err := os.RemoveAll(dropped); err != nil {
		return err
	}
	if err := os.Rename(dir, dropped); err != nil {
		return err
	}
	if err := durable.SyncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	return os.RemoveAll(dropped)
}

// Owner returns the name of the member that owns data dir dir, as its
// node-name records it (tools that work on a stopped member's dir).
func Owner(dir string) (string, error) {
	path := filepath.Join(dir, NodeNameFile)
	data, err := durable.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s is not a member's data dir: %w", dir, err)
	}
	name, err := parseNodeName(data)
	if err != nil {
		return "", fmt.Errorf("%w: %s %v", ErrDamaged, path, err)
	}
	return name, nil
}
