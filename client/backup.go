package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// Backup takes a backup of the whole cluster (every Raft group at a
// linearizable point, one archive for kvnode restore) and returns the
// archive as it arrives, to be closed; cancelling ctx cuts it. Cut short,
// it ends in an error, never a clean io.EOF (the answer has a length).
func (cl *Cluster) Backup(ctx context.Context) (io.ReadCloser, error) {
	resp, err := cl.c.do(ctx, &request{method: http.MethodGet, path: "/management/v1/backup", idempotent: true, stream: true})
	if err != nil {
		return nil, err
	}
	return resp.stream, nil
}

// BackupTo writes a backup into w (neither synced nor closed) and returns
// the bytes written; a nil error means the whole archive reached w.
func (cl *Cluster) BackupTo(ctx context.Context, w io.Writer) (int64, error) {
	rc, err := cl.Backup(ctx)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	n, err := io.Copy(w, rc)
	if err != nil {
		return n, fmt.Errorf("backup: after %d bytes: %w", n, err)
	}
	return n, nil
}
