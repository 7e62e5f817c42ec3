package middleware

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// aliasKey is the request context's key of what AliasPrefix changed.
type aliasKey struct{}

// aliased is what AliasPrefix changed: the client's URL and prefix.
type aliased struct {
	url    url.URL
	prefix string
}

// AliasPrefix serves the paths under from as the same paths under to: it
// rewrites a path that is from, or starts with from and a slash, before
// next (the router) sees it, so that every route, permission and answer
// is to's; RestoreAliasedURL, first in the router's chain, gives the
// handlers the client's URL again. It wraps the router rather than being
// one of Echo's Pre middlewares because Echo builds its middleware chains
// anew for every request when it has any Pre middleware (a closure each);
// only an aliased request pays anything here (its context). The router
// matches the escaped path, so that is what is compared: an escaped letter
// in the prefix is not the prefix.
func AliasPrefix(from, to string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := r.URL
		rest, ok := strings.CutPrefix(u.EscapedPath(), from)
		if ok && (rest == "" || rest[0] == '/') {
			r = r.WithContext(context.WithValue(r.Context(), aliasKey{}, &aliased{url: *u, prefix: from}))
			u.Path = to + strings.TrimPrefix(u.Path, from)
			u.RawPath = to + rest
		}
		next.ServeHTTP(w, r)
	})
}

// RestoreAliasedURL puts back the URL AliasPrefix rewrote, once the router
// is done with it: the URLs handlers build, and the causes and log lines
// that quote the path, then use the client's prefix.
func RestoreAliasedURL(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if a, ok := c.Request().Context().Value(aliasKey{}).(*aliased); ok {
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
	if a, ok := c.Request().Context().Value(aliasKey{}).(*aliased); ok {
		return a.prefix
	}
	return ""
}
