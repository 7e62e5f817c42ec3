package raftgroup

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter lets hashicorp/raft, which logs through go-hclog, write to the
// node's slog logger, so that one --log-level and --log-format govern every
// line the process prints.
type hclogAdapter struct {
	logger *slog.Logger
	name   string
	args   []interface{}
}

func newHCLog(logger *slog.Logger, name string) hclog.Logger {
	return &hclogAdapter{logger: logger, name: name}
}

var _ hclog.Logger = (*hclogAdapter)(nil)

func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace, hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

// replacedByKvnode are hashicorp/raft's info lines about events kvnode
// logs once itself, with more to say: snapshots written ("snapshot
// written": group, index, term, size, duration) and restored ("snapshot
// restored"), and membership changes (package reconcile's and
// Group.RemoveServer's lines, which say which member and why). At info,
// raft's would log each of those events three to five times.
var replacedByKvnode = map[string]bool{
	"starting snapshot up to":        true,
	"creating new snapshot":          true,
	"snapshot complete up to":        true,
	"compacting logs":                true,
	"no logs to truncate":            true,
	"reaping snapshot":               true,
	"copied to local snapshot":       true,
	"Installed remote snapshot":      true,
	"starting restore from snapshot": true,
	"snapshot restore progress":      true,
	"restored from snapshot":         true,
	"updating configuration":         true,
}

func (h *hclogAdapter) Log(level hclog.Level, msg string, args ...interface{}) {
	if level == hclog.Off {
		return
	}
	lvl := slogLevel(level)
	if lvl == slog.LevelInfo && replacedByKvnode[msg] {
		lvl = slog.LevelDebug
	}
	ctx := context.Background()
	if !h.logger.Enabled(ctx, lvl) {
		return
	}
	all := make([]any, 0, len(h.args)+len(args)+2)
	if h.name != "" {
		all = append(all, "subsystem", h.name)
	}
	all = append(all, h.args...)
	all = append(all, args...)
	for i, a := range all {
		// hclog.Fmt defers formatting to the logger; do it here.
		if f, ok := a.(hclog.Format); ok && len(f) > 0 {
			if format, ok := f[0].(string); ok {
				all[i] = fmt.Sprintf(format, f[1:]...)
			}
		}
	}
	h.logger.Log(ctx, lvl, msg, all...)
}

func (h *hclogAdapter) Trace(msg string, args ...interface{}) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogAdapter) Debug(msg string, args ...interface{}) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogAdapter) Info(msg string, args ...interface{})  { h.Log(hclog.Info, msg, args...) }
func (h *hclogAdapter) Warn(msg string, args ...interface{})  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogAdapter) Error(msg string, args ...interface{}) { h.Log(hclog.Error, msg, args...) }

func (h *hclogAdapter) enabled(l slog.Level) bool {
	return h.logger.Enabled(context.Background(), l)
}

func (h *hclogAdapter) IsTrace() bool { return false }
func (h *hclogAdapter) IsDebug() bool { return h.enabled(slog.LevelDebug) }
func (h *hclogAdapter) IsInfo() bool  { return h.enabled(slog.LevelInfo) }
func (h *hclogAdapter) IsWarn() bool  { return h.enabled(slog.LevelWarn) }
func (h *hclogAdapter) IsError() bool { return h.enabled(slog.LevelError) }

func (h *hclogAdapter) ImpliedArgs() []interface{} { return h.args }

func (h *hclogAdapter) With(args ...interface{}) hclog.Logger {
	c := *h
	c.args = append(append([]interface{}{}, h.args...), args...)
	return &c
}

func (h *hclogAdapter) Name() string { return h.name }

func (h *hclogAdapter) Named(name string) hclog.Logger {
	c := *h
	if c.name == "" {
		c.name = name
	} else {
		c.name = c.name + "." + name
	}
	return &c
}

func (h *hclogAdapter) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	return &c
}

// SetLevel is a no-op: the level belongs to the node's slog handler.
func (h *hclogAdapter) SetLevel(hclog.Level) {}

func (h *hclogAdapter) GetLevel() hclog.Level {
	switch {
	case h.IsDebug():
		return hclog.Debug
	case h.IsInfo():
		return hclog.Info
	case h.IsWarn():
		return hclog.Warn
	default:
		return hclog.Error
	}
}

func (h *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *hclogAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		h.Info(strings.TrimSpace(string(p)))
		return len(p), nil
	})
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
