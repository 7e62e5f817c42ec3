//go:build !unix

package watchbench

import "time"

// raiseFileLimit does nothing where there is no RLIMIT_NOFILE.
func raiseFileLimit(uint64) (string, error) { return "", nil }

// processCPU is unknown here.
func processCPU() time.Duration { return 0 }
