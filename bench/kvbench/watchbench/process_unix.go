//go:build unix

package watchbench

import (
	"fmt"
	"syscall"
	"time"
)

// raiseFileLimit lifts this process's soft limit on open files to at
// least want (up to the hard limit): a thousand watchers are a thousand
// sockets. It says what it did, or why the limit stays too low.
func raiseFileLimit(want uint64) (string, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return "", fmt.Errorf("open-file limit: %w", err)
	}
	if lim.Cur >= want {
		return "", nil
	}
	if lim.Max < want {
		return "", fmt.Errorf("open-file limit: %d watchers need about %d files, the hard limit is %d (raise it: ulimit -Hn)", want-fileSlack, want, lim.Max)
	}
	old := lim.Cur
	lim.Cur = want
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return "", fmt.Errorf("open-file limit: raise %d to %d: %w", old, want, err)
	}
	return fmt.Sprintf("raised this process's open-file limit from %d to %d", old, want), nil
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
