package middleware

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// Headers of CORS answers: what a preflight allows, and what scripts may
// read of an answer beyond the safelisted ones (the API's Location,
// Content-Location and Resource-Count, the 503's Retry-After, the 401's
// WWW-Authenticate, the request's ID).
const (
	corsAllowMethods  = "GET, HEAD, POST, PUT, PATCH, DELETE"
	corsAllowHeaders  = "Authorization, Content-Type, Content-Encoding, Accept, X-Request-ID"
	corsExposeHeaders = "Location, Content-Location, Resource-Count, Retry-After, WWW-Authenticate, X-Request-ID"
	corsMaxAge        = "600"
)

// CORS lets pages from origins call the API from a browser: each origin is
// a scheme://host[:port] (ValidateOrigins), or "*" for any. A request from
// another origin is served as if CORS were off, so its browser keeps the
// answer from the page. Preflights (OPTIONS with
// Access-Control-Request-Method) from an allowed origin are answered here,
// before authentication: browsers send them without credentials. Put it
// before everything that can answer, so that error answers carry the
// headers too and the page can read their cause.
func CORS(origins []string) echo.MiddlewareFunc {
	anyOrigin := false
	allowed := make(map[string]bool, len(origins))
	for _, o := range origins {
		if o == "*" {
			anyOrigin = true
		}
		allowed[strings.ToLower(o)] = true
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			origin := req.Header.Get(echo.HeaderOrigin)
			if origin == "" {
				return next(c)
			}
			h := c.Response().Header()
			h.Add(echo.HeaderVary, echo.HeaderOrigin)
			if !anyOrigin && !allowed[strings.ToLower(origin)] {
				return next(c)
			}
			// The origin itself, also for "*": a literal * would be
			// refused by browsers on requests that carry Authorization.
			h.Set(echo.HeaderAccessControlAllowOrigin, origin)
			if req.Method == http.MethodOptions && req.Header.Get(echo.HeaderAccessControlRequestMethod) != "" {
				h.Add(echo.HeaderVary, echo.HeaderAccessControlRequestMethod)
				h.Add(echo.HeaderVary, echo.HeaderAccessControlRequestHeaders)
				h.Set(echo.HeaderAccessControlAllowMethods, corsAllowMethods)
				h.Set(echo.HeaderAccessControlAllowHeaders, corsAllowHeaders)
				h.Set(echo.HeaderAccessControlMaxAge, corsMaxAge)
				return c.NoContent(http.StatusNoContent)
			}
			h.Set(echo.HeaderAccessControlExposeHeaders, corsExposeHeaders)
			return next(c)
		}
	}
}

// ValidateOrigins checks the origins CORS is given: "*", or an origin as
// browsers send it, scheme://host[:port] with scheme http or https and
// nothing after the authority.
func ValidateOrigins(origins []string) error {
	for _, o := range origins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#") {
			return fmt.Errorf("origin %q: want * or scheme://host[:port], as in https://console.example.com", o)
		}
	}
	return nil
}
