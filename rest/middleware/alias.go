package middleware

import (
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// aliasKey is where AliasPrefix keeps the client's URL and prefix.
const aliasKey = "kvnode.alias"

// aliased is what AliasPrefix changed: the client's URL and prefix.
type aliased struct {
	url    url.URL
	prefix string
}

// AliasPrefix serves the paths under from as the same paths under to:
// before routing it rewrites a path that is from, or starts with from and
// a slash, so that every route, permission and answer is to's. Put it in
// Echo's Pre chain, and RestoreAliasedURL first in the Use chain, so that
// the handlers see the client's URL again. The router matches the escaped
// path, so that is what is compared: an escaped letter in the prefix is
// not the prefix.
func AliasPrefix(from, to string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			u := c.Request().URL
			rest, ok := strings.CutPrefix(u.EscapedPath(), from)
			if !ok || rest != "" && rest[0] != '/' {
				return next(c)
			}
			c.Set(aliasKey, aliased{url: *u, prefix: from})
			u.Path = to + strings.TrimPrefix(u.Path, from)
			u.RawPath = to + rest
			return next(c)
		}
	}
}

// RestoreAliasedURL puts back the URL AliasPrefix rewrote, once the router
// is done with it: the URLs handlers build, and the causes and log lines
// that quote the path, then use the client's prefix.
func RestoreAliasedURL(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if a, ok := c.Get(aliasKey).(aliased); ok {
			u := c.Request().URL
			*u = a.url
			u.RawPath = u.EscapedPath()
		}
		return next(c)
	}
}

// AliasUsed is the prefix the client used when AliasPrefix rewrote its
// path, "" otherwise.
func AliasUsed(c echo.Context) string {
	a, _ := c.Get(aliasKey).(aliased)
	return a.prefix
}
