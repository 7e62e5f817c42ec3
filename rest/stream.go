package rest

import (
	"bufio"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/region"
)

// Region listings (GET /kv/v1/{region}?limit= and GET /kv/v1/{region}/keys)
// are streamed: the store's listing hands over one entry at a time and the
// answer goes out through a fixed-size buffer as it is produced, so a
// node's memory does not grow with the region. The JSON is byte for byte
// what the whole answer built at once would be.
//
// Once the 200 and part of the body are sent, a failure (a member serving
// part of a partitioned region dies, the request's deadline passes) can no
// longer become an error status. The handler then aborts the connection
// (http.ErrAbortHandler): the chunked body ends without its final chunk, so
// every HTTP client reports an incomplete answer instead of taking a
// syntactically complete but wrong one. The cause goes to the log.

// streamBuffer is the write buffer of a streamed answer, and so the size of
// its chunks on the wire.
const streamBuffer = 32 << 10

// streamList answers 200 with open, then item for every entry of ls
// separated by commas, then "]}".
func (s *Server) streamList(c echo.Context, ls region.Listing, open []byte, item func(w *bufio.Writer, e region.Entry) error) error {
	resp := c.Response()
	// A client that stops reading blocks the writes; the request's
	// deadline must end them as it ends everything else. (net/http clears
	// the write deadline after each request, so a kept-alive connection
	// does not keep it.)
	if dl, ok := c.Request().Context().Deadline(); ok {
		_ = http.NewResponseController(resp).SetWriteDeadline(dl)
	}
	resp.Header().Set(echo.HeaderContentType, contentTypeJSON)
	resp.WriteHeader(http.StatusOK)
	w := bufio.NewWriterSize(resp, streamBuffer)
	_, err := w.Write(open)
	first := true
	for err == nil {
		e, ok := ls.Next()
		if !ok {
			break
		}
		if !first {
			err = w.WriteByte(',')
		}
		first = false
		if err == nil {
			err = item(w, e)
		}
	}
	if err != nil {
		// The client went away (or its connection broke): nobody is left
		// to tell. Returning ends the listing, whose Close stops the scans.
		s.log.Debug("listing not sent to the end", "path", c.Request().URL.EscapedPath(), "error", err, requestID(c))
		return nil
	}
	if err := ls.Err(); err != nil {
		s.abortStream(c, err)
	}
	if _, err := w.WriteString("]}"); err != nil {
		return nil
	}
	if err := w.Flush(); err != nil {
		s.log.Debug("listing not sent to the end", "path", c.Request().URL.EscapedPath(), "error", err, requestID(c))
	}
	return nil
}

// abortStream ends an answer that cannot be completed; see the top of the
// file. It does not return.
func (s *Server) abortStream(c echo.Context, err error) {
	req := c.Request()
	s.log.Warn("listing failed after its answer began; connection aborted, the client sees an incomplete body",
		"method", req.Method, "path", req.URL.EscapedPath(), "error", err, requestID(c))
	panic(http.ErrAbortHandler)
}
