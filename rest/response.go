package rest

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/rest/jsonout"
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
	// headerClientCN is the common name of the verified client
	// certificate a request came with (Config.ClientCertAuth).
	headerClientCN = "Kvnode-Client-Certificate-CN"
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

// writeDoc answers status with v encoded as JSON.
func writeDoc(c echo.Context, status int, v any) error {
	body, err := jsonout.Marshal(v)
	if err != nil {
		return err
	}
	return writeJSON(c, status, body)
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
