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
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/region"
)

// This file turns the parts of a request (path, query, body) into checked
// values. Every failure wraps region.ErrInvalid (400) unless it says
// otherwise, so handlers just return it.

// errUnsupportedMediaType: a request body that is not declared as JSON (415).
var errUnsupportedMediaType = errors.New("unsupported media type")

// defaultLimit is how many values GET /{region} returns without ?limit, as in Geode.
const defaultLimit = 50

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

// pathKeys splits the decoded {keys} segment on commas. One element is the
// single-key form, several the multi-key form; an empty element is an error.
func pathKeys(c echo.Context) ([]string, error) {
	seg, err := pathParam(c, "keys")
	if err != nil {
		return nil, err
	}
	keys := strings.Split(seg, ",")
	for _, k := range keys {
		if k == "" {
			return nil, fmt.Errorf("%w: key list %q has an empty key", region.ErrInvalid, seg)
		}
	}
	return keys, nil
}

// checkWriteKeys validates keys a write would store or delete: each must be
// a valid key, and a key may not appear twice (which of two values, or which
// of two deletes, would win is not a question a client should have to ask).
func checkWriteKeys(keys []string) error {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if err := region.ValidateKey(k); err != nil {
			return err
		}
		if seen[k] {
			return fmt.Errorf("%w: key %q appears more than once", region.ErrInvalid, k)
		}
		seen[k] = true
	}
	return nil
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

// limitParam reads ?limit=: absent is defaultLimit, ALL (any case) is every
// entry (-1 for the store), otherwise an integer ≥ 0.
func limitParam(c echo.Context) (int, error) {
	s, ok := queryParam(c, "limit")
	if !ok {
		return defaultLimit, nil
	}
	if strings.EqualFold(s, "ALL") {
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: limit %q is neither ALL nor an integer ≥ 0", region.ErrInvalid, s)
	}
	return n, nil
}

// putOp is the ?op= of a PUT.
type putOp int

const (
	opPut putOp = iota
	opReplace
	opCAS
)

// opParam reads ?op= in any letter case; absent means PUT.
func opParam(c echo.Context) (putOp, error) {
	s, ok := queryParam(c, "op")
	if !ok {
		return opPut, nil
	}
	switch strings.ToUpper(s) {
	case "PUT":
		return opPut, nil
	case "REPLACE":
		return opReplace, nil
	case "CAS":
		return opCAS, nil
	}
	return 0, fmt.Errorf("%w: op %q is not PUT, REPLACE or CAS", region.ErrInvalid, s)
}

// ignoreMissingKeyParam reads ?ignoreMissingKey=true|false (any case).
func ignoreMissingKeyParam(c echo.Context) (bool, error) {
	s, ok := queryParam(c, "ignoreMissingKey")
	if !ok {
		return false, nil
	}
	switch strings.ToLower(s) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%w: ignoreMissingKey %q is neither true nor false", region.ErrInvalid, s)
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
