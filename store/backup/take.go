package backup

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kvnode/kvnode/backup/archive"
	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/store/catalog"
)

// Snapshots gives a group's state-machine snapshot at a linearizable
// point after the call began, from this member's replica or a member that
// hosts the group; *store.Router implements it.
type Snapshots interface {
	// Snapshot writes group gid's fsm snapshot stream to the writer open
	// returns (again on each attempt) and returns the group's term.
	Snapshot(ctx context.Context, gid uint64, open func() (io.Writer, error)) (uint64, error)
}

// TakeOptions says who takes a backup, and where its parts wait.
type TakeOptions struct {
	// Member is this member's name and Version kvnode's, for the manifest.
	Member, Version string
	// TempDir holds each group's snapshot until the archive is sent
	// (default: the system's temporary directory).
	TempDir string
	Logger  *slog.Logger
}

// Backup is a backup ready to send: every group's snapshot taken and
// checked, the manifest written. Close removes its files.
type Backup struct {
	Manifest *archive.Manifest
	files    []*os.File // one per group, in the manifest's order
}

// Size is the archive's size in bytes.
func (b *Backup) Size() int64 {
	n, _ := archive.Size(b.Manifest) // the manifest encoded once already
	return n
}

// WriteTo writes the archive.
func (b *Backup) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	aw, err := archive.NewWriter(cw, b.Manifest)
	if err != nil {
		return cw.n, err
	}
	for i, g := range b.Manifest.Groups {
		if _, err := b.files[i].Seek(0, io.SeekStart); err != nil {
			return cw.n, err
		}
		if err := aw.Group(g.ID, b.files[i]); err != nil {
			return cw.n, err
		}
	}
	return cw.n, aw.Close()
}

// Close removes the backup's files.
func (b *Backup) Close() error {
	for _, f := range b.files {
		_ = f.Close()
		_ = os.Remove(f.Name())
	}
	b.files = nil
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Take takes a backup of every group: the control group first (its
// partition table says how many partition groups there are), then each
// partition group, each at its own linearizable point after Take began.
// Each snapshot waits in a temporary file and is read back whole (its
// checksum, its regions' counts) before it is part of the manifest, so
// the archive is complete before its first byte is sent: a failure is an
// error here, never a cut archive.
func Take(ctx context.Context, src Snapshots, o TakeOptions) (_ *Backup, err error) {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	b := &Backup{Manifest: &archive.Manifest{
		FormatVersion: archive.Version, KvnodeVersion: o.Version, Created: start.UTC(), Member: o.Member,
		Regions: []archive.Region{}, Indexes: []archive.Index{}, NamedQueries: []string{}, Functions: []string{},
	}}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	control, err := b.take(ctx, src, 0, o.TempDir)
	if err != nil {
		return nil, err
	}
	m := b.Manifest
	raw, _, ok := control.Meta(catalog.TableKey)
	if ok {
		t, err := partition.Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("backup: the partition table: %w", err)
		}
		m.Partitions, m.ReplicationFactor = t.P(), t.RF
		for _, g := range t.Groups {
			for _, name := range g.Members {
				if !slices.Contains(m.Members, name) {
					m.Members = append(m.Members, name)
				}
			}
		}
		slices.Sort(m.Members)
	}
	summarizeControl(m, control)
	entries := map[string]int64{}
	for _, r := range control.RegionSizes() {
		entries[r.Region] = int64(r.Entries)
	}
	for gid := uint64(1); gid <= uint64(m.Partitions); gid++ {
		f, err := b.take(ctx, src, gid, o.TempDir)
		if err != nil {
			return nil, err
		}
		for _, r := range f.RegionSizes() {
			// A partition group may still hold a destroyed incarnation
			// until its drop applies: count only the live one.
			if id, ok := control.RegionID(r.Region); ok {
				if pid, _ := f.RegionID(r.Region); pid == id {
					entries[r.Region] += int64(r.Entries)
				}
			}
		}
	}
	for i := range m.Regions {
		m.Regions[i].Entries = entries[m.Regions[i].Name]
	}
	size, err := archive.Size(m)
	if err != nil {
		return nil, err
	}
	logger.Info("backup taken", "groups", len(m.Groups), "regions", len(m.Regions), "entries", m.Entries(),
		"bytes", size, "took", time.Since(start).Round(time.Millisecond))
	return b, nil
}

// summarizeControl lists the control group's definitions in m.
func summarizeControl(m *archive.Manifest, control *fsm.FSM) {
	for _, r := range control.Regions() {
		m.Regions = append(m.Regions, archive.Region{Name: r.Name, Kind: string(r.Kind)})
	}
	for _, e := range control.MetaList(catalog.IndexPrefix) {
		def, err := catalog.DecodeIndex(catalog.Entry{Key: e.Key, Value: e.Value, Version: e.Version})
		if err != nil {
			continue
		}
		m.Indexes = append(m.Indexes, archive.Index{Region: def.Region, Name: def.Name})
	}
	for _, e := range control.MetaList(catalog.QueryPrefix) {
		m.NamedQueries = append(m.NamedQueries, strings.TrimPrefix(e.Key, catalog.QueryPrefix))
	}
	for _, e := range control.MetaList(catalog.FunctionPrefix) {
		m.Functions = append(m.Functions, strings.TrimPrefix(e.Key, catalog.FunctionPrefix))
	}
}

// take spools group gid's snapshot into a temporary file, reads it back
// into a state machine (which checks it whole), and records the group in
// the manifest; the state machine is returned for the summary.
func (b *Backup) take(ctx context.Context, src Snapshots, gid uint64, dir string) (*fsm.FSM, error) {
	f, err := os.CreateTemp(dir, fmt.Sprintf("kvnode-backup-g%d-*", gid))
	if err != nil {
		return nil, fmt.Errorf("backup of group %d: %w", gid, err)
	}
	b.files = append(b.files, f)
	term, err := src.Snapshot(ctx, gid, func() (io.Writer, error) {
		if err := f.Truncate(0); err != nil {
			return nil, err
		}
		_, err := f.Seek(0, io.SeekStart)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("backup of group %d: %w", gid, err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("backup of group %d: %w", gid, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("backup of group %d: %w", gid, err)
	}
	st := fsm.New(fsm.Options{Group: gid})
	if err := st.Restore(io.NopCloser(f)); err != nil {
		return nil, fmt.Errorf("backup of group %d: the snapshot does not read back: %w", gid, err)
	}
	var n int64
	for _, r := range st.RegionSizes() {
		n += int64(r.Entries)
	}
	b.Manifest.Groups = append(b.Manifest.Groups, archive.Group{ID: gid, Index: st.AppliedIndex(), Term: term, Entries: n, Bytes: size})
	return st, nil
}
