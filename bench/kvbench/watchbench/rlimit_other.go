//go:build !unix

package watchbench

// raiseFileLimit does nothing where there is no RLIMIT_NOFILE.
func raiseFileLimit(uint64) (string, error) { return "", nil }
