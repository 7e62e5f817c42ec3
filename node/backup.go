package node

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/kvnode/kvnode/store/backup"
)

// backupTakeTimeout bounds the taking of a backup's snapshots (not the
// sending, which lasts as long as the client reads).
const backupTakeTimeout = 30 * time.Minute

// serveBackup answers GET /management/v1/backup (rest's Config.Backup,
// behind its authorization: CLUSTER:MANAGE): every group's snapshot
// through the store's router (here or on a member that hosts the group),
// spooled in the data dir (the disk sized for the data), checked, then
// sent as one archive (package backup/archive). An error while the
// snapshots are taken is returned, for rest's error answer; once the
// archive goes out, a failure cuts it, and the client's check refuses it.
func (n *Node) serveBackup(cfg Config, logger *slog.Logger) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		// The request's deadline (--request-timeout) suits bounded answers;
		// a backup takes as long as the data does.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), backupTakeTimeout)
		defer cancel()
		b, err := backup.Take(ctx, n.store.Router(), backup.TakeOptions{
			Member: cfg.Name, Version: cfg.Version, TempDir: cfg.DataDir, Logger: logger,
		})
		if err != nil {
			return err
		}
		defer b.Close()
		size := strconv.FormatInt(b.Size(), 10)
		h := w.Header()
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", `attachment; filename="kvnode.backup"`)
		// Kv-Backup-Size stays when the answer is gzipped (and its
		// Content-Length unknown), for the client's progress.
		h.Set("Kv-Backup-Size", size)
		h.Set("Content-Length", size)
		// The server's write timeout suits bounded answers too.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		w.WriteHeader(http.StatusOK)
		if _, err := b.WriteTo(w); err != nil {
			logger.Warn("backup: sending the archive failed", "error", err)
		}
		return nil
	}
}
