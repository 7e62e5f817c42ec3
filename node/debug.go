package node

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
)

// The debug listener (--pprof-addr) serves Go's profiles for operators and
// for performance work (docs/performance.md): CPU, heap, goroutines,
// block and mutex contention, execution traces. It has no authentication
// of its own, so it is off by default and belongs on loopback or a
// private network.

// Sampling of the block and mutex profiles while the debug listener is
// on: one blocking event per blockProfileRate nanoseconds spent blocked,
// one in mutexProfileFraction contention events. Both cost a little on
// every blocking operation, which is why they are not on without it.
const (
	blockProfileRate     = 100_000 // 100 µs
	mutexProfileFraction = 100
)

// debugServer serves /debug/pprof/ on its own listener.
type debugServer struct {
	ln  net.Listener
	srv *http.Server
}

// startDebug listens on addr and serves the profiles there.
func startDebug(addr string, logger *slog.Logger) (*debugServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on --pprof-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	runtime.SetBlockProfileRate(blockProfileRate)
	runtime.SetMutexProfileFraction(mutexProfileFraction)
	d := &debugServer{ln: ln, srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}}
	go func() {
		if err := d.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("debug listener stopped", "error", err)
		}
	}()
	logger.Warn("debug listener on: /debug/pprof/ is served without authentication", "addr", ln.Addr().String())
	return d, nil
}

// Addr is the address the debug listener listens on.
func (d *debugServer) Addr() string { return d.ln.Addr().String() }

// close stops the debug listener and turns the extra sampling off.
func (d *debugServer) close() {
	_ = d.srv.Close()
	runtime.SetBlockProfileRate(0)
	runtime.SetMutexProfileFraction(0)
}
