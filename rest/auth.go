package rest

import (
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/rest/access"
)

// Authentication and authorization (rest-details.md, Security): with a
// security file, every request but the open routes needs credentials (401
// without them): HTTP Basic, or with Config.ClientCertAuth the client
// certificate its connection was verified with, whose common name is the
// user (Basic wins when both come; auth.Identify). Then it needs the
// permission its route needs (403 without it). The permissions that depend
// on more than the route — the regions an OQL query reads, the one a
// function declares — are checked by their handlers through authorize.

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
		req := c.Request()
		if s.cfg.ClientCertAuth && req.TLS != nil && len(req.TLS.PeerCertificates) > 0 {
			// Whom the certificate names, for the console's top bar.
			c.Response().Header().Set(headerClientCN, req.TLS.PeerCertificates[0].Subject.CommonName)
		}
		if s.cfg.Auth == nil || open[c.Path()] {
			return next(c)
		}
		pr, login, err := s.cfg.Auth.Identify(req, s.cfg.ClientCertAuth)
		if err != nil {
			if login.Method == "" {
				return err // no credentials: a 401, not a failed login
			}
			if s.cfg.Observer != nil {
				s.cfg.Observer.LoginFailed(login.Refusal(err))
			}
			// Never the password.
			s.log.Warn("authentication failed", "user", login.User, "by", login.Method, "client", login.Client, "method", req.Method, "path", req.URL.EscapedPath(), "error", err, requestID(c))
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

// routePermissions is what the route needs, before its handler runs
// (package access).
func (s *Server) routePermissions(c echo.Context) []auth.Permission {
	r := access.Route{Method: c.Request().Method, Pattern: c.Path()}
	var err error
	r.Region, err = pathParam(c, "region")
	r.RegionOK = err == nil
	if r.Key, _ = queryParam(c, "key"); r.Pattern == kvPrefix+"/:region/:keys" {
		r.Keys, _ = pathKeys(c)
	}
	return access.Needs(r)
}

// authorizeRegions checks read permission on every region a query names
// (DATA:READ itself for a query that names none).
func (s *Server) authorizeRegions(c echo.Context, paths []string) error {
	for _, need := range access.QueryNeeds(paths) {
		if err := s.authorize(c, need); err != nil {
			return err
		}
	}
	return nil
}
