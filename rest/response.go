package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// contentTypeJSON is the one Content-Type of every JSON answer. Echo's c.JSON
// writes "application/json" without the charset, so the server writes its
// bodies itself.
const contentTypeJSON = "application/json; charset=utf-8"

// Headers Echo has no constant for.
const (
	headerContentLocation = "Content-Location"
	headerResourceCount   = "Resource-Count"
	headerRetryAfter      = "Retry-After"
)

// writeJSON answers status with body, which is already JSON. A HEAD answer
// carries the headers only.
func writeJSON(c echo.Context, status int, body []byte) error {
	c.Response().Header().Set(echo.HeaderContentType, contentTypeJSON)
	if c.Request().Method == http.MethodHead {
		return c.NoContent(status)
	}
	c.Response().WriteHeader(status)
	_, err := c.Response().Write(body)
	return err
}

// marshal encodes a response document (never an entry value: those are
// written as stored). HTML escaping is off because the answers are JSON
// documents, not HTML, and "<" should read as "<" in a cause.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// writeDoc answers status with v encoded as JSON.
func writeDoc(c echo.Context, status int, v any) error {
	body, err := marshal(v)
	if err != nil {
		return err
	}
	return writeJSON(c, status, body)
}

// regionValues builds {"<region>":[v1,v2,...]} by concatenation, so stored
// values go out byte for byte; a nil value (a missing key the client asked
// to ignore) is written as null.
func regionValues(name string, values []json.RawMessage) ([]byte, error) {
	quoted, err := marshal(name)
	if err != nil {
		return nil, err
	}
	size := len(quoted) + 4
	for _, v := range values {
		size += len(v) + 1
	}
	buf := make([]byte, 0, size)
	buf = append(buf, '{')
	buf = append(buf, quoted...)
	buf = append(buf, ':', '[')
	for i, v := range values {
		if i > 0 {
			buf = append(buf, ',')
		}
		if v == nil {
			buf = append(buf, "null"...)
		} else {
			buf = append(buf, v...)
		}
	}
	buf = append(buf, ']', '}')
	return buf, nil
}

// baseURL is the scheme and host the client used to reach this node.
func baseURL(c echo.Context) string {
	scheme := "http"
	if c.Request().TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + c.Request().Host
}

// kvBase is <base>/kv/v1, or <base>/geode/v1 for a request that came
// through the alias: the URLs an answer names use the client's prefix.
func kvBase(c echo.Context) string {
	return baseURL(c) + apiPrefix(c)
}

// entryURL is <base>/kv/v1/{region}/{k1},{k2},... with every name escaped.
// The single key "keys" is written %6Beys: plain, its URL would be the
// /{region}/keys endpoint instead of the entry.
func entryURL(c echo.Context, regionName string, keys ...string) string {
	escaped := make([]string, len(keys))
	for i, k := range keys {
		escaped[i] = url.PathEscape(k)
	}
	if len(keys) == 1 && keys[0] == "keys" {
		escaped[0] = "%6Beys"
	}
	return kvBase(c) + "/" + url.PathEscape(regionName) + "/" + strings.Join(escaped, ",")
}
