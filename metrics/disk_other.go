//go:build !unix

package metrics

import "errors"

// diskSpace is not measured outside Unix: the metrics are left out.
func diskSpace(string) (free, size uint64, err error) {
	return 0, 0, errors.New("free space is measured on Unix only")
}
