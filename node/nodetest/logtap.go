package nodetest

import (
	"log/slog"

	"github.com/kvnode/kvnode/internal/logtap"
)

// LogTap records the log lines of a test's nodes at info level and above,
// so a test can wait for the line that proves something happened (an
// attempt was made and refused) instead of sleeping and hoping it did.
type LogTap struct{ tap logtap.Tap }

// Logger returns a logger whose records go to the tap, tagged with node
// (and, with KVNODE_TEST_LOG set, to stderr as usual).
func (lt *LogTap) Logger(node string) *slog.Logger {
	return lt.tap.Logger(node, Logger(node).Handler())
}

// Seen reports whether a line from node contains every one of parts.
func (lt *LogTap) Seen(node string, parts ...string) bool { return lt.tap.Seen(node, parts...) }

// Matching returns the lines from node that contain every one of parts.
func (lt *LogTap) Matching(node string, parts ...string) []string {
	return lt.tap.Matching(append([]string{node + ": "}, parts...)...)
}
