package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// logRecorder keeps the log records of a test's nodes, each as one line of
// text ("node: message key=value ..."), so a test can check what was
// logged. Debug records are kept too.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

// logger returns a logger whose records go to r, tagged with node.
func (r *logRecorder) logger(node string) *slog.Logger {
	return slog.New(&recordHandler{r: r, prefix: node + ": "})
}

// matching returns the recorded lines that contain every one of parts.
func (r *logRecorder) matching(parts ...string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, l := range r.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

type recordHandler struct {
	r      *logRecorder
	prefix string // node name and the attributes added by With
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordHandler) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(h.prefix)
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.r.mu.Lock()
	h.r.lines = append(h.r.lines, b.String())
	h.r.mu.Unlock()
	return nil
}

func (h *recordHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	for _, a := range attrs {
		fmt.Fprintf(&b, "%s=%v ", a.Key, a.Value)
	}
	return &recordHandler{r: h.r, prefix: h.prefix + b.String()}
}

func (h *recordHandler) WithGroup(string) slog.Handler { return h }
