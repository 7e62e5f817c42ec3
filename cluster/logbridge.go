package cluster

import (
	"context"
	"log"
	"log/slog"
	"strings"
)

// newMemberlistLogger returns a *log.Logger, the only logger memberlist
// takes, that forwards each line to l at the level named by memberlist's
// "[DEBUG]", "[INFO]", "[WARN]" or "[ERR]" prefix, so gossip chatter obeys
// the node's --log-level and format like every other log line.
func newMemberlistLogger(l *slog.Logger) *log.Logger {
	return log.New(logBridge{log: l}, "", 0)
}

type logBridge struct {
	log *slog.Logger
}

// Write receives exactly one formatted line per call from log.Logger.
func (b logBridge) Write(p []byte) (int, error) {
	level, msg := parseMemberlistLine(string(p))
	ctx := context.Background()
	if b.log.Enabled(ctx, level) {
		b.log.Log(ctx, level, msg)
	}
	return len(p), nil
}

// parseMemberlistLine splits "[WARN] memberlist: text\n" into its level and
// "memberlist: text". A line without a known tag is kept whole at Info, so
// nothing memberlist says is lost.
func parseMemberlistLine(line string) (slog.Level, string) {
	line = strings.TrimRight(line, "\r\n")
	rest, ok := strings.CutPrefix(line, "[")
	if !ok {
		return slog.LevelInfo, line
	}
	tag, msg, ok := strings.Cut(rest, "]")
	if !ok {
		return slog.LevelInfo, line
	}
	var level slog.Level
	switch tag {
	case "TRACE", "DEBUG":
		level = slog.LevelDebug
	case "INFO":
		level = slog.LevelInfo
	case "WARN", "WARNING":
		level = slog.LevelWarn
	case "ERR", "ERROR":
		level = slog.LevelError
	default:
		return slog.LevelInfo, line
	}
	return level, strings.TrimLeft(msg, " ")
}
