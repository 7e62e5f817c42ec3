package raftgroup

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestHCLogAdapter(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h := newHCLog(logger, "raft").With("group", 0)
	h.Debug("hidden")
	h.Info("initial configuration", "servers", hclog.Fmt("%d servers", 3))
	h.Named("snapshot").Warn("slow", "ms", 12)
	out := buf.String()
	for _, want := range []string{
		`level=INFO msg="initial configuration" subsystem=raft group=0 servers="3 servers"`,
		`level=WARN msg=slow subsystem=raft.snapshot group=0 ms=12`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hidden") {
		t.Errorf("debug line logged at info level:\n%s", out)
	}
	if h.IsDebug() || !h.IsInfo() {
		t.Errorf("IsDebug=%v IsInfo=%v at info level, want false true", h.IsDebug(), h.IsInfo())
	}
}
