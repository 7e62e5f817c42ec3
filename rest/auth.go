package rest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/auth"
)

// Authentication and authorization (rest-details.md, Security): with a
// security file, every request but /ping needs HTTP Basic credentials
// (401 without them), and the permission its route needs (403 without
// it). The permissions that depend on more than the route — the regions
// an OQL query reads, the one a function declares — are checked by their
// handlers through authorize.

// principalKey is where the authenticated principal waits in the context.
const principalKey = "kvnode.principal"

// open are the routes that need no credentials: health probes, the API's
// description, Swagger UI and the console, which are static (the calls
// Swagger UI and the console make need credentials like any other).
var open = map[string]bool{
	kvPrefix + "/ping": true, "/livez": true, "/readyz": true,
	kvPrefix + openAPIPath: true, docsPath: true, docsPath + "/*": true,
	"/": true, consolePath: true, consolePath + "/*": true,
}

// authenticate is the middleware: credentials, then the route's
// permissions.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Auth == nil || open[c.Path()] {
			return next(c)
		}
		req := c.Request()
		user, password, ok := req.BasicAuth()
		if !ok {
			return fmt.Errorf("%w: send HTTP Basic credentials", auth.ErrUnauthenticated)
		}
		client, _, err := net.SplitHostPort(req.RemoteAddr)
		if err != nil {
			client = req.RemoteAddr
		}
		pr, err := s.cfg.Auth.Authenticate(client, user, password)
		if err != nil {
			if s.cfg.Observer != nil {
				s.cfg.Observer.LoginFailed(errors.Is(err, auth.ErrThrottled))
			}
			// Never the password.
			s.log.Warn("authentication failed", "user", user, "client", client, "method", req.Method, "path", req.URL.EscapedPath(), "error", err, requestID(c))
			return err
		}
		c.Set(principalKey, pr)
		for _, need := range s.routePermissions(c) {
			if err := s.authorize(c, need); err != nil {
				return err
			}
		}
		return next(c)
	}
}

// authorize checks that the request's principal holds need (always true
// with security off).
func (s *Server) authorize(c echo.Context, need auth.Permission) error {
	if s.cfg.Auth == nil {
		return nil
	}
	pr, ok := c.Get(principalKey).(*auth.Principal)
	if !ok {
		return fmt.Errorf("%w: send HTTP Basic credentials", auth.ErrUnauthenticated)
	}
	if !pr.Can(need) {
		return fmt.Errorf("%w: user %s lacks %s", auth.ErrForbidden, pr.Name, need)
	}
	return nil
}

// routePermissions is what the route needs, before its handler runs.
func (s *Server) routePermissions(c echo.Context) []auth.Permission {
	method := c.Request().Method
	path := c.Path()
	if strings.HasPrefix(path, managementPrefix) {
		return []auth.Permission{{Resource: "CLUSTER", Operation: "MANAGE"}}
	}
	read := auth.Permission{Resource: "DATA", Operation: "READ"}
	write := auth.Permission{Resource: "DATA", Operation: "WRITE"}
	switch path {
	case kvPrefix, kvPrefix + "/":
		return []auth.Permission{read}
	case kvPrefix + "/servers", metricsPath:
		return []auth.Permission{{Resource: "CLUSTER", Operation: "READ"}}
	case kvPrefix + "/queries":
		return []auth.Permission{read}
	case kvPrefix + "/queries/adhoc":
		return nil // read on each region the query reads, in adhocQuery
	case kvPrefix + "/queries/:id":
		switch method {
		case http.MethodDelete:
			return []auth.Permission{write}
		case http.MethodPost:
			return nil // read on each region the query reads, in runQuery
		}
		return []auth.Permission{read}
	case kvPrefix + "/functions":
		return []auth.Permission{read}
	case kvPrefix + "/functions/:id":
		return nil // the function's own permission, in runFunction
	case kvPrefix + "/watch":
		return nil // read on the watched region, in watch
	}
	name, err := pathParam(c, "region")
	if err != nil {
		return nil // the handler answers 400
	}
	op := read
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodDelete:
		op = write
	}
	op.Region = name
	switch path {
	case kvPrefix + "/:region":
		if method == http.MethodPost {
			if k, ok := queryParam(c, "key"); ok && k != "" {
				op.Key = k
			}
		}
		return []auth.Permission{op}
	case kvPrefix + "/:region/keys":
		return []auth.Permission{op}
	case kvPrefix + "/:region/:keys":
		keys, err := pathKeys(c)
		if err != nil {
			return []auth.Permission{op}
		}
		out := make([]auth.Permission, len(keys))
		for i, k := range keys {
			out[i] = op
			out[i].Key = k
		}
		return out
	}
	return nil
}

// authorizeRegions checks read permission on every region a query names
// (DATA:READ itself for a query that names none).
func (s *Server) authorizeRegions(c echo.Context, paths []string) error {
	if len(paths) == 0 {
		return s.authorize(c, auth.Permission{Resource: "DATA", Operation: "READ"})
	}
	for _, p := range paths {
		if err := s.authorize(c, auth.Permission{Resource: "DATA", Operation: "READ", Region: strings.TrimPrefix(p, "/")}); err != nil {
			return err
		}
	}
	return nil
}
