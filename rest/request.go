package rest

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/internal/chunked"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/input"
)

// This file reads the parts of a request (path, query, body) off the Echo
// context; package input decides what the values mean and refuses the bad
// ones. Every failure wraps region.ErrInvalid (400) unless it says
// otherwise, so handlers just return it.

// errUnsupportedMediaType: a request body that is not declared as JSON (415).
var errUnsupportedMediaType = errors.New("unsupported media type")

// pathParam returns the named path parameter decoded exactly once. Routing
// sees the escaped path (routeOnEscapedPath), so "a%2Fb" is the key "a/b",
// "100%25" is "100%" and "%2525" is "%25".
func pathParam(c echo.Context, name string) (string, error) {
	v, err := url.PathUnescape(c.Param(name))
	if err != nil {
		return "", fmt.Errorf("%w: path segment %q is not validly escaped: %v", region.ErrInvalid, c.Param(name), err)
	}
	return v, nil
}

// pathKeys reads the {keys} segment as a key list (input.ParseKeys).
func pathKeys(c echo.Context) ([]string, error) {
	seg, err := pathParam(c, "keys")
	if err != nil {
		return nil, err
	}
	return input.ParseKeys(seg)
}

// consistency reads ?consistency= (linearizable by default).
func consistency(c echo.Context) (region.Consistency, error) {
	return region.ParseConsistency(c.QueryParam("consistency"))
}

// queryParam returns the first value of a query parameter and whether the
// parameter is present at all (?key= is present and empty).
func queryParam(c echo.Context, name string) (string, bool) {
	vs, ok := c.QueryParams()[name]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// limitParam reads ?limit= (input.ParseLimit).
func limitParam(c echo.Context) (int, error) {
	return input.ParseLimit(queryParam(c, "limit"))
}

// opParam reads ?op= (input.ParsePutOp).
func opParam(c echo.Context) (input.PutOp, error) {
	return input.ParsePutOp(queryParam(c, "op"))
}

// ttlParam reads ?ttl= of a write (input.ParseTTL).
func ttlParam(c echo.Context) (region.TTL, error) {
	return input.ParseTTL(queryParam(c, "ttl"))
}

// ignoreMissingKeyParam reads ?ignoreMissingKey=true|false (input.ParseFlag).
func ignoreMissingKeyParam(c echo.Context) (bool, error) {
	v, ok := queryParam(c, "ignoreMissingKey")
	return input.ParseFlag("ignoreMissingKey", v, ok)
}

// listParam reads a comma-separated parameter (input.ParseList).
func listParam(c echo.Context, name string) ([]string, error) {
	v, ok := queryParam(c, name)
	return input.ParseList(name, v, ok)
}

// readJSONBody checks that the body is declared as JSON and reads it, at
// most MaxBodyBytes of it (a larger body is an *http.MaxBytesError, 413).
func (s *Server) readJSONBody(c echo.Context) ([]byte, error) {
	req := c.Request()
	ct := req.Header.Get(echo.HeaderContentType)
	if ct == "" {
		return nil, fmt.Errorf("%w: the request needs a JSON body with Content-Type: application/json", errUnsupportedMediaType)
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != echo.MIMEApplicationJSON {
		return nil, fmt.Errorf("%w: Content-Type %q is not application/json", errUnsupportedMediaType, ct)
	}
	// Not io.ReadAll: its growth copies unpreemptibly (package chunked).
	body, err := chunked.ReadAll(http.MaxBytesReader(c.Response(), req.Body, s.cfg.MaxBodyBytes), req.ContentLength, -1)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, fmt.Errorf("request body is larger than %d bytes: %w", tooBig.Limit, err)
		}
		return nil, fmt.Errorf("read request body: %w", err)
	}
	return body, nil
}
