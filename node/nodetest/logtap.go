package nodetest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// LogTap records the log lines of a test's nodes at info level and above,
// each as one line of text ("node: message key=value ..."), so a test can
// wait for the line that proves something happened (an attempt was made
// and refused) instead of sleeping and hoping it did.
type LogTap struct {
	mu    sync.Mutex
	lines []string
}

// Logger returns a logger whose records go to the tap, tagged with node
// (and, with KVNODE_TEST_LOG set, to stderr as usual).
func (lt *LogTap) Logger(node string) *slog.Logger {
	return slog.New(&tapHandler{lt: lt, prefix: node + ": ", next: Logger(node).Handler()})
}

// Seen reports whether a line from node contains every one of parts.
func (lt *LogTap) Seen(node string, parts ...string) bool {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	for _, l := range lt.lines {
		if !strings.HasPrefix(l, node+": ") {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

type tapHandler struct {
	lt     *LogTap
	prefix string // node name and the attributes added by With
	next   slog.Handler
}

func (h *tapHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.next.Enabled(ctx, l)
}

func (h *tapHandler) Handle(ctx context.Context, rec slog.Record) error {
	if h.next.Enabled(ctx, rec.Level) {
		_ = h.next.Handle(ctx, rec)
	}
	if rec.Level < slog.LevelInfo {
		return nil
	}
	var b strings.Builder
	b.WriteString(h.prefix)
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.lt.mu.Lock()
	h.lt.lines = append(h.lt.lines, b.String())
	h.lt.mu.Unlock()
	return nil
}

func (h *tapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	for _, a := range attrs {
		fmt.Fprintf(&b, "%s=%v ", a.Key, a.Value)
	}
	return &tapHandler{lt: h.lt, prefix: h.prefix + b.String(), next: h.next.WithAttrs(attrs)}
}

func (h *tapHandler) WithGroup(name string) slog.Handler {
	return &tapHandler{lt: h.lt, prefix: h.prefix, next: h.next.WithGroup(name)}
}
