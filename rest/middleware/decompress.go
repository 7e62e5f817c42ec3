package middleware

import (
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/region"
)

// ErrUnsupportedEncoding: a request body in a Content-Encoding other than
// gzip (rest answers 415, as RFC 9110 §15.5.16 asks).
var ErrUnsupportedEncoding = errors.New("unsupported content encoding")

// Decompress decodes request bodies sent with Content-Encoding: gzip (see
// the package doc). The body is decoded as it is read, so whoever reads it
// bounds the decoded size. A request without a body is left alone,
// whatever its Content-Encoding says.
func Decompress() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			coding := strings.ToLower(strings.TrimSpace(req.Header.Get(echo.HeaderContentEncoding)))
			if coding == "" || coding == "identity" || req.ContentLength == 0 || req.Body == nil || req.Body == http.NoBody {
				return next(c)
			}
			if coding != "gzip" && coding != "x-gzip" {
				return fmt.Errorf("%w: Content-Encoding %q: a request body may be sent as it is or gzip-compressed", ErrUnsupportedEncoding, coding)
			}
			req.Body = &gunzipBody{src: req.Body}
			req.Header.Del(echo.HeaderContentEncoding)
			req.Header.Del(echo.HeaderContentLength)
			req.ContentLength = -1 // the decoded length is unknown until read
			return next(c)
		}
	}
}

// gunzipBody decodes a gzip body as it is read. It opens the gzip stream
// on the first read, not before, so that a handler that never reads the
// body never waits for it.
type gunzipBody struct {
	src io.ReadCloser
	zr  *gzip.Reader
}

func (b *gunzipBody) Read(p []byte) (int, error) {
	if b.zr == nil {
		zr, err := gzip.NewReader(b.src)
		if err == io.EOF {
			return 0, io.EOF // an empty body stays empty: the reader decides whether that is allowed
		}
		if err != nil {
			return 0, corrupt(err)
		}
		b.zr = zr
	}
	n, err := b.zr.Read(p)
	if err != nil && err != io.EOF {
		err = corrupt(err)
	}
	return n, err
}

func (b *gunzipBody) Close() error { return b.src.Close() }

// corrupt makes a gzip format error the client's (400). Other errors, of
// the connection, stay as they are.
func corrupt(err error) error {
	var flateErr flate.CorruptInputError
	if errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &flateErr) {
		return fmt.Errorf("%w: the request body is not valid gzip (Content-Encoding: gzip): %v", region.ErrInvalid, err)
	}
	return err
}
