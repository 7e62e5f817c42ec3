package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/internal/durable"
)

// FormatFile, in the data dir, records the version of the dir's format: a
// decimal number and a newline.
const FormatFile = "format"

// Format is the version of the data dir's format this build writes. It
// counts layouts a member cannot open without code that knows them:
//
//	1  each group's log in its own raft.db (raft-boltdb), no format file
//	2  one write-ahead log for every group of the member (raft/wal); the
//	   raft.db files keep only term and vote
//
// A build opens every older format: the entries a format-1 group's raft.db
// still holds move into the member's log when the group opens (package
// store/raftgroup), so a format-1 dir becomes a format-2 one in place. A
// change a build of today could misread (a new layout, a new state file
// that must not be ignored) raises Format, keeps the code that reads the
// old one, and adds a golden data dir of the new format next to the old
// ones (node/testdata/golden-datadir). Formats of what is inside the files
// (commands, snapshots, log records) carry their own versions.
const Format = 2

// ErrNewerFormat is a data dir written by a newer kvnode than this build.
var ErrNewerFormat = errors.New("data dir written by a newer kvnode")

// CheckFormat reads the format recorded in data dir dir: 0 when there is
// none (a new dir, or one written before the format file existed, format 1
// or 2); used reports whether the dir holds a member's state already (its
// node-name or Raft state), to tell an upgrade from a first start. It
// refuses a dir of a format newer than this build's: what a newer build
// wrote, this one may misread, and an older member has no way to tell
// which of its files it must leave alone.
func CheckFormat(dir string) (recorded int, used bool, err error) {
	for _, name := range []string{NodeNameFile, RaftDir} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			used = true
		} else if !errors.Is(err, fs.ErrNotExist) {
			return 0, false, fmt.Errorf("data dir %s: %w", dir, err)
		}
	}
	path := filepath.Join(dir, FormatFile)
	data, err := durable.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, used, nil
	}
	if err != nil {
		return 0, used, fmt.Errorf("read %s: %w", path, err)
	}
	v, err := parseFormat(data)
	if err != nil {
		return 0, used, fmt.Errorf("%w: %s %v; it records the data dir's format version: if the dir was last used by this build, write %d and a newline into it", ErrDamaged, path, err, Format)
	}
	if v > Format {
		return v, used, fmt.Errorf("%w: %s is of format %d, this build reads formats up to %d; downgrade is not supported: run a kvnode that reads format %d, or start this one with an empty --data-dir and let it get its data from the cluster (or a backup)",
			ErrNewerFormat, dir, v, Format, v)
	}
	return v, used, nil
}

// RecordFormat records, durably, that data dir dir is of this build's
// format. The store calls it once it has checked the dir (CheckFormat) and
// claimed it, before it opens any group.
func RecordFormat(dir string) error {
	if err := durable.WriteFile(filepath.Join(dir, FormatFile), []byte(strconv.Itoa(Format)+"\n"), 0o640); err != nil {
		return fmt.Errorf("record the data dir's format in %s: %w", dir, err)
	}
	return nil
}

// parseFormat reads the format file's content: a positive decimal number
// and a newline.
func parseFormat(data []byte) (int, error) {
	if len(data) == 0 {
		return 0, errors.New("is empty")
	}
	s, ok := strings.CutSuffix(string(data), "\n")
	if !ok {
		return 0, fmt.Errorf("is truncated: %s does not end in a newline", quoteStart(string(data)))
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 || strconv.Itoa(v) != s {
		return 0, fmt.Errorf("does not hold a format version: it holds %s", quoteStart(string(data)))
	}
	return v, nil
}
