package node

import (
	"context"
	"log/slog"

	"github.com/kvnode/kvnode/rest"
	"github.com/kvnode/kvnode/store/backup"
)

// takeBackup is GET /management/v1/backup's work: every group's snapshot
// through the store's router (here or on a member that hosts the group),
// spooled in the data dir (the disk sized for the data) until sent.
func (n *Node) takeBackup(cfg Config, logger *slog.Logger) rest.BackupFunc {
	return func(ctx context.Context) (rest.Backup, error) {
		b, err := backup.Take(ctx, n.store.Router(), backup.TakeOptions{
			Member: cfg.Name, Version: cfg.Version, TempDir: cfg.DataDir, Logger: logger,
		})
		if err != nil {
			return nil, err
		}
		return b, nil
	}
}
