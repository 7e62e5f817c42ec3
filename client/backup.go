package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// Backup starts a backup of the whole cluster (GET /management/v1/backup:
// every Raft group's snapshot at a linearizable point after the request,
// one archive) and returns the archive as it arrives; the caller closes
// it. Cancelling ctx cuts the stream. The stream is the archive's bytes
// for kvnode restore; a stream cut short ends in an error, never in a
// clean io.EOF.
func (cl *Cluster) Backup(ctx context.Context) (io.ReadCloser, error) {
	resp, err := cl.backup(ctx)
	if err != nil {
		return nil, err
	}
	return resp.stream, nil
}

// BackupTo writes a backup of the whole cluster into w and returns the
// bytes written. It checks the count against the size the member
// announced, so that a nil error means the whole archive reached w; w is
// not synced nor closed.
func (cl *Cluster) BackupTo(ctx context.Context, w io.Writer) (int64, error) {
	resp, err := cl.backup(ctx)
	if err != nil {
		return 0, err
	}
	defer resp.stream.Close()
	n, err := io.Copy(w, resp.stream)
	if err != nil {
		return n, fmt.Errorf("backup from %s: after %d bytes: %w", resp.member, n, err)
	}
	if size, err := strconv.ParseInt(resp.header.Get("Kv-Backup-Size"), 10, 64); err == nil && size != n {
		return n, fmt.Errorf("backup from %s: %d bytes of %d: %w", resp.member, n, size, io.ErrUnexpectedEOF)
	}
	return n, nil
}

// backup sends the backup request; taking a backup changes nothing, so
// it may be sent again.
func (cl *Cluster) backup(ctx context.Context) (*response, error) {
	return cl.c.do(ctx, &request{method: http.MethodGet, path: "/management/v1/backup", idempotent: true, stream: true})
}
