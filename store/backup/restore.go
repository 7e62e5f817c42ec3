package backup

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/kvnode/kvnode/backup/archive"
	"github.com/kvnode/kvnode/internal/durable"
	"github.com/kvnode/kvnode/store/datadir"
	"github.com/kvnode/kvnode/store/raftlog"
)

// RestoreOptions says which archive to restore, where, and as whom.
type RestoreOptions struct {
	// From is the archive's path.
	From string
	// DataDir is the new member's data dir: absent or empty.
	DataDir string
	// Name is the member that will start on DataDir (its --name), and
	// InternalAddr its internal address as members dial it (its
	// --advertise-internal, or --internal-addr): the one voter of every
	// group. Gossip corrects the address if it differs.
	Name, InternalAddr string
	Logger             *slog.Logger
}

// Report says what restore or recover did.
type Report struct {
	Member string
	// Held lists the groups the member now holds alone, with their
	// applied index and entries; Lost the partition groups it does not
	// (recover), which start over empty.
	Held []HeldGroup
	Lost []uint64
	// Manifest and Checksum are the archive's (restore only).
	Manifest *archive.Manifest
	Checksum string
}

// HeldGroup is one group a restored or recovered member holds.
type HeldGroup struct {
	ID      uint64
	Index   uint64
	Term    uint64
	Entries int64
}

// VerifyFile verifies the archive at path whole (archive.Verify).
func VerifyFile(path string) (*archive.Manifest, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	m, sum, err := archive.Verify(f)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return m, sum, nil
}

// Restore seeds o.DataDir from the archive at o.From so that member
// o.Name starts as a one-member cluster holding every group of the
// archive (package doc). It verifies the whole archive first and refuses
// a data dir that is not empty: a damaged archive or a used dir writes
// nothing.
func Restore(o RestoreOptions) (*Report, error) {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if o.Name == "" || strings.ContainsFunc(o.Name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
		return nil, fmt.Errorf("restore: --name %q: the member's name must be non-empty, without spaces", o.Name)
	}
	if o.InternalAddr == "" {
		return nil, errors.New("restore: the member's internal address (--internal-addr) is needed: the groups' configuration records it")
	}
	m, sum, err := VerifyFile(o.From)
	if err != nil {
		return nil, fmt.Errorf("restore refused, nothing written: %w", err)
	}
	if empty, err := emptyDir(o.DataDir); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	} else if !empty {
		return nil, fmt.Errorf("restore refused, nothing written: data dir %s is not empty (restore seeds a new member's dir: name an absent or empty one)", o.DataDir)
	}
	logger.Info("restore: archive verified", "from", o.From, "sha256", sum, "groups", len(m.Groups), "entries", m.Entries(), "created", m.Created)
	rep, err := restore(o, m)
	if err != nil {
		// Whatever was written is of no use: leave the dir as it was.
		if entries, _ := os.ReadDir(o.DataDir); len(entries) > 0 {
			for _, e := range entries {
				_ = os.RemoveAll(filepath.Join(o.DataDir, e.Name()))
			}
		}
		return nil, fmt.Errorf("restore: %w", err)
	}
	rep.Manifest, rep.Checksum = m, sum
	logger.Info("restore done", "data_dir", o.DataDir, "member", o.Name, "groups", len(rep.Held))
	return rep, nil
}

func restore(o RestoreOptions, m *archive.Manifest) (*Report, error) {
	if err := datadir.Claim(o.DataDir, o.Name); err != nil {
		return nil, err
	}
	if err := datadir.RecordFormat(o.DataDir); err != nil {
		return nil, err
	}
	if err := durable.MkdirAll(filepath.Join(o.DataDir, datadir.RaftDir), 0o750); err != nil {
		return nil, err
	}
	logs, err := raftlog.Open(datadir.WALPath(o.DataDir), raftlog.Options{})
	if err != nil {
		return nil, err
	}
	defer logs.Close()
	s := &seed{dataDir: o.DataDir, logs: logs, self: o.Name, addr: o.InternalAddr}
	held := make([]uint64, 0, len(m.Groups))
	for _, g := range m.Groups {
		held = append(held, g.ID)
	}
	f, err := os.Open(o.From)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rep := &Report{Member: o.Name}
	_, _, err = archive.Read(f, func(m *archive.Manifest, g archive.Group, r io.Reader) error {
		st := partitionFSM(g.ID, m.Partitions)
		if err := restoreInto(st, r); err != nil {
			return fmt.Errorf("group %d: %w", g.ID, err)
		}
		if g.ID == 0 {
			if _, _, err := claimTable(st, g.Term, o.Name, held); err != nil {
				return err
			}
		} else {
			dir := datadir.GroupDir(o.DataDir, g.ID)
			if err := durable.MkdirAll(dir, 0o750); err != nil {
				return err
			}
			if err := datadir.WriteGroupInfo(dir, datadir.GroupInfo{ID: g.ID, Partitions: m.Partitions}); err != nil {
				return err
			}
		}
		if err := s.group(g.ID, st, g.Term); err != nil {
			return err
		}
		rep.Held = append(rep.Held, HeldGroup{ID: g.ID, Index: st.AppliedIndex(), Term: g.Term, Entries: g.Entries})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}
