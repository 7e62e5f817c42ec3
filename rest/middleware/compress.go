package middleware

import (
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
)

// Compress gzips the answers of clients that accept gzip (see the package
// doc). Put it before every middleware that writes answers, so that error
// answers are compressed too.
func Compress() echo.MiddlewareFunc {
	// The compressors are pooled: each holds hundreds of kilobytes of
	// state, too much to allocate per request. BestSpeed: a node's CPU is
	// the cluster's, and JSON shrinks well even so (a listing of orders
	// like the spec's to about a seventh).
	pool := &sync.Pool{New: func() any {
		zw, err := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
		if err != nil {
			panic(err) // only for an invalid level
		}
		return zw
	}}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			res := c.Response()
			// Caches must not serve one client's coding to another.
			res.Header().Add(echo.HeaderVary, echo.HeaderAcceptEncoding)
			req := c.Request()
			if req.Method == http.MethodHead || !acceptsGzip(req.Header.Values(echo.HeaderAcceptEncoding)) {
				return next(c)
			}
			w := &gzipWriter{ResponseWriter: res.Writer, pool: pool}
			res.Writer = w
			// No defer: a panic (an aborted answer) must leave the gzip
			// stream unfinished, and a compressor whose state is unknown
			// out of the pool.
			err := next(c)
			res.Writer = w.ResponseWriter
			w.finish()
			return err
		}
	}
}

// acceptsGzip reads Accept-Encoding (RFC 9110 §12.5.3): gzip is accepted
// when named (or x-gzip) with a non-zero q, or, when not named, covered by
// "*" with a non-zero q.
func acceptsGzip(values []string) bool {
	gzipQ, starQ := -1.0, -1.0
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			q := 1.0
			if name, val, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.EqualFold(strings.TrimSpace(name), "q") {
				f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
				if err != nil {
					continue
				}
				q = f
			}
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "gzip", "x-gzip":
				gzipQ = max(gzipQ, q)
			case "*":
				starQ = max(starQ, q)
			}
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}

// minGzipBytes is the smallest answer worth compressing. Below it gzip's
// header and trailer outweigh what it saves, and compressing a single
// entry (a few hundred bytes) cost both ends CPU for nothing: measured,
// 64 clients reading entries were 4% slower with every answer gzipped.
const minGzipBytes = 1024

// gzipWriter holds the status back until it knows the body is at least
// minGzipBytes (or the handler flushes, or returns), when it decides the
// coding: gzip, unless the handler chose one itself or the body is
// shorter. An answer without a body goes out as it is.
type gzipWriter struct {
	http.ResponseWriter
	pool    *sync.Pool
	zw      *gzip.Writer // nil while undecided and when not compressing
	status  int          // held back until started
	started bool         // the status has been sent
	held    []byte       // the body's first bytes, while undecided
}

// WriteHeader holds the status back, except a 1xx (sent at once; the
// final status follows) and a status that has no body (sent at once, as
// it is).
func (w *gzipWriter) WriteHeader(code int) {
	switch {
	case code < http.StatusOK:
		w.ResponseWriter.WriteHeader(code)
	case w.started || w.status != 0:
	default:
		w.status = code
		if code == http.StatusNoContent || code == http.StatusNotModified {
			w.start(nil)
		}
	}
}

func (w *gzipWriter) Write(p []byte) (int, error) {
	if !w.started {
		if len(w.held) > 0 || len(p) < minGzipBytes {
			w.held = append(w.held, p...)
			if len(w.held) < minGzipBytes {
				return len(p), nil
			}
			if err := w.release(true); err != nil {
				return 0, err
			}
			return len(p), nil
		}
		w.start(p) // long enough at once: no copy
	}
	if w.zw == nil {
		return w.ResponseWriter.Write(p)
	}
	return w.zw.Write(p)
}

// release starts the answer with what is held: compressed when gzip is
// true, else as it is.
func (w *gzipWriter) release(gzip bool) error {
	held := w.held
	w.held = nil
	if gzip {
		if held == nil {
			held = []byte{} // a body is coming
		}
		w.start(held)
	} else {
		w.start(nil)
	}
	if len(held) == 0 {
		return nil
	}
	var err error
	if w.zw == nil {
		_, err = w.ResponseWriter.Write(held)
	} else {
		_, err = w.zw.Write(held)
	}
	return err
}

// Flush sends what the compressor holds, so that a handler that flushes
// (a stream of events) is not held up by compression.
func (w *gzipWriter) Flush() {
	if !w.started {
		_ = w.release(true) // a stream: it may grow, compress it
	}
	if w.zw != nil {
		_ = w.zw.Flush()
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection (rest sets a
// write deadline on streamed listings).
func (w *gzipWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// start sends the held-back status, and when a compressed body is to come
// (first, its first bytes; nil when there is none or it goes as it is)
// and the handler chose no coding, switches to gzip. The Content-Type net/http would sniff from
// the body is sniffed here, from the bytes before compression.
func (w *gzipWriter) start(first []byte) {
	w.started = true
	if w.status == 0 {
		w.status = http.StatusOK
	}
	h := w.Header()
	if first != nil && h.Get(echo.HeaderContentEncoding) == "" {
		if h.Get(echo.HeaderContentType) == "" && len(first) > 0 {
			h.Set(echo.HeaderContentType, http.DetectContentType(first))
		}
		h.Set(echo.HeaderContentEncoding, "gzip")
		h.Del(echo.HeaderContentLength) // the handler's, of the uncompressed body
		w.zw = w.pool.Get().(*gzip.Writer)
		w.zw.Reset(w.ResponseWriter)
	}
	w.ResponseWriter.WriteHeader(w.status)
}

// finish completes an answer whose handler returned: a status without a
// body is sent now, a gzip stream gets its end. A write error here is the
// client's connection failing; nobody is left to tell.
func (w *gzipWriter) finish() {
	if !w.started {
		if w.status != 0 || len(w.held) > 0 {
			// Short (or empty): as it is. net/http sends the
			// Content-Length of what it is given at once.
			_ = w.release(false)
		}
		return
	}
	if w.zw != nil {
		_ = w.zw.Close()
		w.zw.Reset(io.Discard)
		w.pool.Put(w.zw)
		w.zw = nil
	}
}
