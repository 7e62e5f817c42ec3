//go:build unix

package metrics

import "golang.org/x/sys/unix"

// diskSpace is the bytes free for an unprivileged user and the size of the
// file system that holds dir.
func diskSpace(dir string) (free, size uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	bs := uint64(st.Bsize) //nolint:gosec // a block size is positive
	return uint64(st.Bavail) * bs, uint64(st.Blocks) * bs, nil
}
