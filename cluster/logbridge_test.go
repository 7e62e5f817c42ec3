package cluster

import (
	"context"
	"log/slog"
	"sync"
	"testing"
)

// recordHandler keeps every record it is given at or above its level.
type recordHandler struct {
	level slog.Level
	mu    sync.Mutex
	recs  []slog.Record
}

func (h *recordHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r)
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

func TestMemberlistLogBridgeLevels(t *testing.T) {
	tests := []struct {
		line      string
		wantLevel slog.Level
		wantMsg   string
	}{
		{"[DEBUG] memberlist: Stream connection from=127.0.0.1:1", slog.LevelDebug, "memberlist: Stream connection from=127.0.0.1:1"},
		{"[INFO] memberlist: Marking b as failed", slog.LevelInfo, "memberlist: Marking b as failed"},
		{"[WARN] memberlist: Refuting a suspect message", slog.LevelWarn, "memberlist: Refuting a suspect message"},
		{"[ERR] memberlist: Conflicting address for b", slog.LevelError, "memberlist: Conflicting address for b"},
		{"[ERROR] memberlist: x", slog.LevelError, "memberlist: x"},
		{"[TRACE] memberlist: x", slog.LevelDebug, "memberlist: x"},
		{"[FOO] memberlist: x", slog.LevelInfo, "[FOO] memberlist: x"},
		{"no tag at all", slog.LevelInfo, "no tag at all"},
		{"[unterminated", slog.LevelInfo, "[unterminated"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			h := &recordHandler{level: slog.LevelDebug}
			newMemberlistLogger(slog.New(h)).Printf("%s", tt.line)
			if len(h.recs) != 1 {
				t.Fatalf("records: got %d, want 1", len(h.recs))
			}
			r := h.recs[0]
			if r.Level != tt.wantLevel || r.Message != tt.wantMsg {
				t.Errorf("got %v %q, want %v %q", r.Level, r.Message, tt.wantLevel, tt.wantMsg)
			}
		})
	}
}

func TestMemberlistLogBridgeRespectsLevel(t *testing.T) {
	h := &recordHandler{level: slog.LevelWarn}
	l := newMemberlistLogger(slog.New(h))
	l.Printf("[DEBUG] memberlist: chatter")
	l.Printf("[INFO] memberlist: news")
	l.Printf("[WARN] memberlist: trouble")
	if len(h.recs) != 1 || h.recs[0].Message != "memberlist: trouble" {
		var got []string
		for _, r := range h.recs {
			got = append(got, r.Message)
		}
		t.Errorf("with level warn: got %q, want only %q", got, "memberlist: trouble")
	}
}
