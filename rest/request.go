package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

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
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), req.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, fmt.Errorf("request body is larger than %d bytes: %w", tooBig.Limit, err)
		}
		return nil, fmt.Errorf("read request body: %w", err)
	}
	return body, nil
}

// parseArray splits a JSON array into its elements, keeping each element's
// bytes as sent (values are never re-serialized), and checks it has want
// elements, one per key of the path.
func parseArray(body []byte, want int) ([]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("%w: a multi-key PUT needs a JSON array of %d values, one per key", region.ErrInvalid, want)
	}
	var elems []json.RawMessage
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%w: malformed JSON in element %d: %v", region.ErrInvalid, len(elems), err)
		}
		elems = append(elems, raw)
	}
	if err := endOfJSON(dec, json.Delim(']')); err != nil {
		return nil, err
	}
	if len(elems) != want {
		return nil, fmt.Errorf("%w: the body has %d values for %d keys", region.ErrInvalid, len(elems), want)
	}
	return elems, nil
}

// parseCASPair reads {"@old":{..},"@new":{..}}: both members present, both
// objects, nothing else.
func parseCASPair(raw []byte) (oldV, newV json.RawMessage, err error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf(`%w: a CAS body is {"@old":{...},"@new":{...}}: `+format, append([]any{region.ErrInvalid}, a...)...)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, bad("the body is not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, bad("malformed JSON: %v", err)
		}
		name, _ := tok.(string)
		var member json.RawMessage
		if err := dec.Decode(&member); err != nil {
			return nil, nil, bad("malformed JSON: %v", err)
		}
		var dst *json.RawMessage
		switch name {
		case "@old":
			dst = &oldV
		case "@new":
			dst = &newV
		default:
			return nil, nil, bad("unexpected member %q", name)
		}
		if *dst != nil {
			return nil, nil, bad("member %q appears twice", name)
		}
		if *dst, err = region.NormalizeValue(member); err != nil {
			return nil, nil, fmt.Errorf("CAS member %s: %w", name, err)
		}
	}
	if err := endOfJSON(dec, json.Delim('}')); err != nil {
		return nil, nil, err
	}
	if oldV == nil || newV == nil {
		return nil, nil, bad("@old and @new are both required")
	}
	return oldV, newV, nil
}

// endOfJSON consumes the closing delimiter and checks nothing follows it.
func endOfJSON(dec *json.Decoder, closing json.Delim) error {
	if tok, err := dec.Token(); err != nil || tok != closing {
		return fmt.Errorf("%w: malformed JSON: expected %q", region.ErrInvalid, closing)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: malformed JSON: data after the closing %q", region.ErrInvalid, closing)
	}
	return nil
}
