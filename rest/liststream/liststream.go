// Package liststream writes the answers of region listings (GET
// /kv/v1/{region}?limit= and GET /kv/v1/{region}/keys) as they are
// produced: the store's listing hands over one entry at a time and the
// answer goes out through a fixed-size buffer, so a member's memory does
// not grow with the region. The JSON is byte for byte what the whole
// answer built at once would be.
//
// Once the 200 and part of the body are sent, a failure (a member serving
// part of a partitioned region dies, the request's deadline passes) can no
// longer become an error status. The writer then aborts the connection
// (http.ErrAbortHandler): the chunked body ends without its final chunk, so
// every HTTP client reports an incomplete answer instead of taking a
// syntactically complete but wrong one. The cause goes to the log.
//
// Plain net/http over region's vocabulary; package rest calls it.
package liststream

import (
	"bufio"
	"log/slog"
	"net/http"

	"github.com/kvnode/kvnode/region"
)

// buffer is the write buffer of a streamed answer, and so the size of its
// chunks on the wire.
const buffer = 32 << 10

// Write answers 200 (Content-Type contentType) with open, then item for
// every entry of ls separated by commas, then "]}". attrs go into every
// log line (the request's id). It returns when the answer is sent or the
// client went away; a listing that fails after the answer began aborts the
// connection (it panics with http.ErrAbortHandler, which net/http and
// Echo's recovery let through).
func Write(w http.ResponseWriter, req *http.Request, log *slog.Logger, contentType string, ls region.Listing, open []byte, item func(w *bufio.Writer, e region.Entry) error, attrs ...any) {
	// A client that stops reading blocks the writes; the request's
	// deadline must end them as it ends everything else. (net/http clears
	// the write deadline after each request, so a kept-alive connection
	// does not keep it.)
	if dl, ok := req.Context().Deadline(); ok {
		_ = http.NewResponseController(w).SetWriteDeadline(dl)
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, buffer)
	_, err := bw.Write(open)
	first := true
	for err == nil {
		e, ok := ls.Next()
		if !ok {
			break
		}
		if !first {
			err = bw.WriteByte(',')
		}
		first = false
		if err == nil {
			err = item(bw, e)
		}
	}
	path := req.URL.EscapedPath()
	if err != nil {
		// The client went away (or its connection broke): nobody is left
		// to tell. Returning ends the listing, whose Close stops the scans.
		log.Debug("listing not sent to the end", append([]any{"path", path, "error", err}, attrs...)...)
		return
	}
	if err := ls.Err(); err != nil {
		log.Warn("listing failed after its answer began; connection aborted, the client sees an incomplete body",
			append([]any{"method", req.Method, "path", path, "error", err}, attrs...)...)
		panic(http.ErrAbortHandler)
	}
	if _, err := bw.WriteString("]}"); err != nil {
		return
	}
	if err := bw.Flush(); err != nil {
		log.Debug("listing not sent to the end", append([]any{"path", path, "error", err}, attrs...)...)
	}
}
