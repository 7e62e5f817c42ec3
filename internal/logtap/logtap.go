package logtap

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// Tap keeps the records at or above Level (the zero value: info).
type Tap struct {
	Level slog.Level

	mu    sync.Mutex
	lines []string
}

// Logger returns a logger whose records go to the tap, tagged with node,
// and also to next when it is not nil (for logs a developer asked to see).
func (t *Tap) Logger(node string, next slog.Handler) *slog.Logger {
	return slog.New(&handler{t: t, prefix: node + ": ", next: next})
}

// Matching returns the recorded lines that contain every one of parts.
func (t *Tap) Matching(parts ...string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, l := range t.lines {
		if containsAll(l, parts) {
			out = append(out, l)
		}
	}
	return out
}

// Seen reports whether a line from node contains every one of parts.
func (t *Tap) Seen(node string, parts ...string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.lines {
		if strings.HasPrefix(l, node+": ") && containsAll(l, parts) {
			return true
		}
	}
	return false
}

func containsAll(l string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(l, p) {
			return false
		}
	}
	return true
}

type handler struct {
	t      *Tap
	prefix string // node name and the attributes added by With
	next   slog.Handler
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.t.Level || (h.next != nil && h.next.Enabled(ctx, l))
}

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	if h.next != nil && h.next.Enabled(ctx, rec.Level) {
		_ = h.next.Handle(ctx, rec)
	}
	if rec.Level < h.t.Level {
		return nil
	}
	var b strings.Builder
	b.WriteString(h.prefix)
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.t.mu.Lock()
	h.t.lines = append(h.t.lines, b.String())
	h.t.mu.Unlock()
	return nil
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	for _, a := range attrs {
		fmt.Fprintf(&b, "%s=%v ", a.Key, a.Value)
	}
	var next slog.Handler
	if h.next != nil {
		next = h.next.WithAttrs(attrs)
	}
	return &handler{t: h.t, prefix: h.prefix + b.String(), next: next}
}

func (h *handler) WithGroup(name string) slog.Handler {
	var next slog.Handler
	if h.next != nil {
		next = h.next.WithGroup(name)
	}
	return &handler{t: h.t, prefix: h.prefix, next: next}
}
