package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kvnode/kvnode/internal/durable"
)

// The data dir's state files, node-name and each partition group's
// group.json, are written with durable.WriteFile (temporary file, fsync,
// rename, fsync of the directory), so a crash or power cut leaves each
// either as it was or complete. They are read strictly: a missing, empty,
// truncated or unparsable one, or one that holds what it should not, stops
// New with ErrDamagedState naming the file and what to do. A node that
// guessed instead would run under a wrong Raft identity or with the wrong
// number of partition groups, which is worse than not running.

const (
	// nodeNameFile, in the data dir, holds the name of the node that owns
	// it, and a newline.
	nodeNameFile = "node-name"
	// raftDirName, in the data dir, holds the Raft groups' dirs.
	raftDirName = "raft"
	// droppedSuffix marks a partition group's dir while groupSet.drop
	// deletes it: renamed first, so that a crash in the middle of the
	// deletion leaves a dir that is plainly garbage, not a group dir with
	// some of its files gone.
	droppedSuffix = ".dropped"
)

// ErrDamagedState is a state file of the data dir that cannot be trusted:
// the node refuses to start with it.
var ErrDamagedState = errors.New("damaged data dir")

// claimDataDir creates dir and records which node owns it, refusing a data
// dir that belongs to another node name (reusing it would give this node
// another member's Raft identity and log), or whose node-name is damaged.
// A leftover node-name.tmp (a first start cut short) is removed; without
// node-name and without Raft state the dir is new and is claimed.
func claimDataDir(dir, name string) error {
	if err := durable.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, nodeNameFile)
	data, err := durable.ReadFile(path)
	switch {
	case err == nil:
		owner, err := parseNodeName(data)
		if err != nil {
			return fmt.Errorf("%w: %s %v; it records which node owns the data dir (its Raft identity): if the dir is node N's, write N and a newline into it, otherwise start with another --data-dir",
				ErrDamagedState, path, err)
		}
		if owner != name {
			return fmt.Errorf("data dir %s belongs to node %q, not %q: start with --name %s or use another --data-dir", dir, owner, name, owner)
		}
		return nil
	case errors.Is(err, fs.ErrNotExist):
		raftDir := filepath.Join(dir, raftDirName)
		if _, err := os.Stat(raftDir); err == nil {
			// node-name is written before any Raft state: it was lost.
			return fmt.Errorf("%w: %s is missing, but %s holds Raft state of an unknown node: if the dir is node N's, write N and a newline into %s, otherwise start with another --data-dir",
				ErrDamagedState, path, raftDir, path)
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

// readGroupInfo reads the group.json in dir, partition group gid's dir.
// found is false when there is none and the dir holds nothing else (a
// crash cut the group's creation short); a group.json missing beside the
// group's Raft state is damage.
func readGroupInfo(dir string, gid uint64) (info groupInfo, found bool, err error) {
	path := filepath.Join(dir, groupInfoFile)
	damaged := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s %s; it records the partition group's id and the cluster's number of partition groups P: write {\"id\":%d,\"partitions\":P} into it, or remove %s so that this node gets the group's data again from its other members",
			ErrDamagedState, path, fmt.Sprintf(format, args...), gid, dir)
	}
	data, err := durable.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return groupInfo{}, false, fmt.Errorf("partition group %d: %w", gid, err)
		}
		if len(entries) > 0 {
			return groupInfo{}, false, damaged("is missing, but the dir holds the group's Raft state (%s)", entries[0].Name())
		}
		return groupInfo{}, false, nil
	}
	if err != nil {
		return groupInfo{}, false, fmt.Errorf("partition group %d: read %s: %w", gid, path, err)
	}
	if len(data) == 0 {
		return groupInfo{}, false, damaged("is empty")
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return groupInfo{}, false, damaged("is not valid JSON (%v): it holds %s", err, quoteStart(string(data)))
	}
	switch {
	case info.ID != gid:
		return groupInfo{}, false, damaged("records group %d, not %d", info.ID, gid)
	case info.Partitions < 1:
		return groupInfo{}, false, damaged("records %d partition groups, want at least 1", info.Partitions)
	case uint64(info.Partitions) < gid:
		return groupInfo{}, false, damaged("records %d partition groups, too few to have group %d", info.Partitions, gid)
	}
	return info, true, nil
}
