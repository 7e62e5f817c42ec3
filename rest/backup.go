package rest

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// Backup is a backup taken and ready to send (package store/backup's,
// wired by node): every group's snapshot is taken before the first byte
// goes out, so a failure to take one is an error answer, never a cut
// archive.
type Backup interface {
	// Size is the archive's size in bytes.
	Size() int64
	WriteTo(w io.Writer) (int64, error)
	// Close frees what the backup holds (its temporary files).
	Close() error
}

// headerBackupSize announces an archive's size even when the answer is
// gzipped (and Content-Length then unknown), for the client's progress.
const headerBackupSize = "Kv-Backup-Size"

// mgmtBackup is GET /management/v1/backup: an archive of every group
// (package backup/archive), each at a linearizable point after the request
// arrived. CLUSTER:MANAGE with security on, as all of /management: the
// archive holds every region's data, which CLUSTER:READ does not grant.
func (s *Server) mgmtBackup(c echo.Context) error {
	if s.cfg.Backup == nil {
		return echo.ErrNotFound
	}
	b, err := s.cfg.Backup(c.Request().Context())
	if err != nil {
		return err
	}
	defer b.Close()
	// The server's write timeout suits answers of bounded size; an archive
	// takes as long as its size.
	_ = http.NewResponseController(c.Response()).SetWriteDeadline(time.Time{})
	size := b.Size()
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/octet-stream")
	h.Set(echo.HeaderContentDisposition, `attachment; filename="kvnode.backup"`)
	h.Set(headerBackupSize, strconv.FormatInt(size, 10))
	h.Set(echo.HeaderContentLength, strconv.FormatInt(size, 10))
	c.Response().WriteHeader(http.StatusOK)
	if _, err := b.WriteTo(c.Response()); err != nil {
		// Too late for an error answer: the client sees an archive without
		// its checksum, which it refuses.
		s.log.Warn("backup: sending the archive failed", "error", err)
	}
	return nil
}

// BackupFunc takes a backup (Config.Backup).
type BackupFunc func(ctx context.Context) (Backup, error)
