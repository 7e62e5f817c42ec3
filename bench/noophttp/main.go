// Command noophttp is an HTTP server that does no work: it answers every
// GET with the same small JSON document. bench/compare.sh loads it with
// kvbench's get workload, the client and load loop that measure kvnode's
// reads, to show what HTTP alone allows on the machine: the ceiling that
// a stale read of kvnode is compared with (issue 30).
//
// The document is --size bytes (218 by default, the size of the values
// compare.sh writes) and names --region as a replicated region, padded with
// a filler member: kvbench's kvnode target looks its region up with a GET
// before it starts, and finds it in the answer as in kvnode's.
//
//	noophttp --addr 127.0.0.1:18090
//	kvbench --endpoints http://127.0.0.1:18090 --workload get --preload=false
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	fs := flag.NewFlagSet("noophttp", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:18090", "address to listen on")
	region := fs.String("region", "orders", "the region the document lists")
	size := fs.Int("size", 218, "bytes of every answer's body")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: a bad flag exits
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := serve(ctx, *addr, *region, *size)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "noophttp:", err)
		os.Exit(1)
	}
}

// serve answers on addr until ctx ends.
func serve(ctx context.Context, addr, region string, size int) error {
	doc, err := document(region, size)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler(doc), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut) // the process ends next
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// document is a JSON object of exactly size bytes that lists region as
// kvnode's GET /kv/v1 does.
func document(region string, size int) ([]byte, error) {
	if strings.ContainsAny(region, `"\`) {
		return nil, fmt.Errorf("region %q: no quotes or backslashes", region)
	}
	head := `{"regions":[{"name":"` + region + `","type":"REPLICATE"}],"filler":"`
	pad := size - len(head) - len(`"}`)
	if pad < 0 {
		return nil, fmt.Errorf("size %d: at least %d bytes for region %s", size, len(head)+2, region)
	}
	return []byte(head + strings.Repeat("x", pad) + `"}`), nil
}

// handler answers every GET with doc, anything else with 405.
func handler(doc []byte) http.Handler {
	length := strconv.Itoa(len(doc))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{length}
		_, _ = w.Write(doc)
	})
}
