package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/backup/archive"
	"github.com/kvnode/kvnode/cli/render"
)

// backupSummary is backup's -o json: the manifest and what was saved.
type backupSummary struct {
	File     string            `json:"file"`
	Bytes    int64             `json:"bytes"`
	SHA256   string            `json:"sha256"`
	Manifest *archive.Manifest `json:"manifest"`
}

func newBackupCmd(a *app) *cobra.Command {
	var out string
	c := a.command("backup --out FILE", "Save a backup of the whole cluster into a file", `
Save a backup of every Raft group (GET /management/v1/backup: replicated and
partitioned regions, index definitions, named queries, deployed functions,
the partition table) into FILE. Each group's part is taken at a
linearizable point after the request; writes go on meanwhile. The archive
is written to a temporary file beside FILE, synced, verified whole (its
SHA-256 and structure) and only then renamed to FILE: FILE is either the
previous file or a complete, verified backup. Progress goes to standard
error when it is a terminal; a summary to standard output. Needs
CLUSTER:MANAGE with security on. Restore it with kvnode restore.

The --timeout flag does not apply: a backup takes as long as its size.
`, cobra.NoArgs, func(s *session, _ []string) error {
		if out == "" {
			return usagef("backup: --out FILE is required")
		}
		s.untimed()
		sum, err := backup(s, out)
		if err != nil {
			return err
		}
		if s.p.json {
			return s.p.doc(sum)
		}
		m := sum.Manifest
		w := s.p.out
		fmt.Fprintf(w, "saved %s: %d bytes, sha256 %s\n", sum.File, sum.Bytes, sum.SHA256)
		fmt.Fprintf(w, "taken by %s (kvnode %s) at %s\n", m.Member, m.KvnodeVersion, m.Created.Format(time.RFC3339))
		fmt.Fprintf(w, "%d groups (%d partition groups), %d regions, %d entries, %d indexes, %d named queries, %d functions\n",
			len(m.Groups), m.Partitions, len(m.Regions), m.Entries(), len(m.Indexes), len(m.NamedQueries), len(m.Functions))
		t := render.NewTable(w, "GROUP", "INDEX", "TERM", "ENTRIES", "BYTES")
		for _, g := range m.Groups {
			t.Row(strconv.FormatUint(g.ID, 10), strconv.FormatUint(g.Index, 10), strconv.FormatUint(g.Term, 10),
				strconv.FormatInt(g.Entries, 10), strconv.FormatInt(g.Bytes, 10))
		}
		return t.Flush()
	})
	c.Flags().StringVar(&out, "out", "", "the file to save the backup into (replaced atomically)")
	return c
}

// backup saves the cluster's backup into path atomically and verified.
func backup(s *session, path string) (*backupSummary, error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	var w io.Writer = tmp
	if errOut := s.cmd.ErrOrStderr(); isTerminal(errOut) {
		// The size is known once the answer began: BackupTo records it
		// before it copies.
		p := &progress{out: errOut, total: func() int64 {
			n, _ := strconv.ParseInt(s.answer.Header.Get("Kv-Backup-Size"), 10, 64)
			return n
		}}
		defer p.done()
		w = io.MultiWriter(tmp, p)
	}
	n, err := s.Cluster().BackupTo(s.ctx, w)
	if err != nil {
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	m, sum, err := archive.Verify(tmp)
	if err != nil {
		return nil, fmt.Errorf("backup: what the member sent does not verify, nothing saved: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		_ = d.Close()
		if err != nil {
			return nil, fmt.Errorf("backup: sync %s: %w", dir, err)
		}
	}
	return &backupSummary{File: path, Bytes: n, SHA256: sum, Manifest: m}, nil
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress shows bytes received, at most every half second, on one line.
type progress struct {
	out       io.Writer
	total     func() int64 // the archive's size, 0 when unknown
	n         int64
	lastShown time.Time
}

func (p *progress) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if time.Since(p.lastShown) >= 500*time.Millisecond {
		p.show()
	}
	return len(b), nil
}

func (p *progress) show() {
	p.lastShown = time.Now()
	if total := p.total(); total > 0 {
		fmt.Fprintf(p.out, "\rbackup: %s of %s (%d%%)", mib(p.n), mib(total), p.n*100/total)
		return
	}
	fmt.Fprintf(p.out, "\rbackup: %s", mib(p.n))
}

func (p *progress) done() {
	p.show()
	fmt.Fprintln(p.out)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
