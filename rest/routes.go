package rest

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/rest/access"
	"github.com/kvnode/kvnode/rest/console"
	"github.com/kvnode/kvnode/rest/middleware"
	"github.com/kvnode/kvnode/rest/openapi"
	"github.com/kvnode/kvnode/rest/operations"
)

// Path prefixes of the two APIs, and Geode's name for the first, which is
// served as an alias of it (middleware.AliasPrefix), so that a Geode client
// works by changing only the host.
const (
	kvPrefix         = access.KVPrefix
	managementPrefix = access.ManagementPrefix
	geodePrefix      = "/geode/v1"
)

// The API's description (under kvPrefix), Swagger UI, the console; the
// node's metrics.
const (
	openAPIPath = "/openapi.json"
	docsPath    = "/docs"
	consolePath = "/console"
	metricsPath = access.MetricsPath
)

// routes registers every route of the server; this file is the one place
// that says which paths exist and which methods they take.
//
// Echo's router prefers a fixed segment to a parameter, but when the fixed
// route lacks the request's method it falls back to the parameter route:
// PUT /kv/v1/orders/keys would become a PUT of the key "keys", and
// POST /kv/v1/servers a POST into a region named "servers". The fixed routes
// beside a parameter are therefore registered with fixed(), which answers
// every method itself.
func (s *Server) routes() {
	// Probes: liveness and readiness, beside the spec's /kv/v1/ping.
	s.handle(http.MethodGet, "/livez", s.ping)
	s.handle(http.MethodHead, "/livez", s.ping)
	s.handle(http.MethodGet, "/readyz", s.ready)
	s.handle(http.MethodHead, "/readyz", s.ready)
	// The node's metrics, for Prometheus.
	s.handle(http.MethodGet, metricsPath, s.metrics)

	// Regions and entries.
	s.handle(http.MethodGet, kvPrefix, s.listRegions)
	s.handle(http.MethodGet, kvPrefix+"/", s.listRegions)
	s.fixed(kvPrefix+"/ping", map[string]echo.HandlerFunc{
		http.MethodGet:  s.ping,
		http.MethodHead: s.ping,
	})
	s.fixed(kvPrefix+"/servers", map[string]echo.HandlerFunc{
		http.MethodGet: s.listServers,
	})
	// Queries: fixed routes beside /:region and /:region/:keys.
	s.fixed(kvPrefix+"/queries", map[string]echo.HandlerFunc{
		http.MethodGet:  s.listQueries,
		http.MethodPost: s.createQuery,
	})
	s.fixed(kvPrefix+"/queries/adhoc", map[string]echo.HandlerFunc{
		http.MethodGet: s.adhocQuery,
	})
	s.fixed(kvPrefix+"/queries/:id", map[string]echo.HandlerFunc{
		http.MethodPost:   s.runQuery,
		http.MethodPut:    s.updateQuery,
		http.MethodDelete: s.deleteQuery,
	})
	// Change streams (package watch).
	s.fixed(kvPrefix+"/watch", map[string]echo.HandlerFunc{
		http.MethodGet: s.watch,
	})
	// Functions.
	s.fixed(kvPrefix+"/functions", map[string]echo.HandlerFunc{
		http.MethodGet: s.listFunctions,
	})
	s.fixed(kvPrefix+"/functions/:id", map[string]echo.HandlerFunc{
		http.MethodPost: s.runFunction,
	})
	s.handle(http.MethodGet, kvPrefix+"/:region", s.listEntries, notReserved)
	s.handle(http.MethodHead, kvPrefix+"/:region", s.countEntries, notReserved)
	s.handle(http.MethodPost, kvPrefix+"/:region", s.createEntry, notReserved)
	s.handle(http.MethodDelete, kvPrefix+"/:region", s.clearRegion, notReserved)
	s.fixed(kvPrefix+"/:region/keys", map[string]echo.HandlerFunc{
		http.MethodGet: notReserved(s.listKeys),
	})
	s.handle(http.MethodGet, kvPrefix+"/:region/:keys", s.getEntries, notReserved)
	s.handle(http.MethodPut, kvPrefix+"/:region/:keys", s.putEntries, notReserved)
	s.handle(http.MethodDelete, kvPrefix+"/:region/:keys", s.deleteEntries, notReserved)

	// Region management, in the shape of Geode's cluster management API.
	s.handle(http.MethodGet, managementPrefix+"/regions", s.mgmtListRegions)
	s.handle(http.MethodPost, managementPrefix+"/regions", s.mgmtCreateRegion)
	s.handle(http.MethodGet, managementPrefix+"/regions/:name", s.mgmtGetRegion)
	s.handle(http.MethodPatch, managementPrefix+"/regions/:name", s.mgmtAlterRegion)
	s.handle(http.MethodDelete, managementPrefix+"/regions/:name", s.mgmtDeleteRegion)
	s.handle(http.MethodGet, managementPrefix+"/regions/:name/indexes", s.mgmtListIndexes)
	s.handle(http.MethodPost, managementPrefix+"/regions/:name/indexes", s.mgmtCreateIndex)
	s.handle(http.MethodGet, managementPrefix+"/regions/:name/indexes/:index", s.mgmtGetIndex)
	s.handle(http.MethodDelete, managementPrefix+"/regions/:name/indexes/:index", s.mgmtDeleteIndex)

	// Deployed functions.
	s.handle(http.MethodGet, managementPrefix+"/functions", s.mgmtListFunctions)
	s.handle(http.MethodGet, managementPrefix+"/functions/:id", s.mgmtGetFunction)
	s.handle(http.MethodPut, managementPrefix+"/functions/:id", s.mgmtPutFunction)
	s.handle(http.MethodDelete, managementPrefix+"/functions/:id", s.mgmtDeleteFunction)

	// Cluster status for operators.
	s.handle(http.MethodGet, managementPrefix+"/cluster", s.mgmtCluster)
	s.handle(http.MethodGet, managementPrefix+"/partitions", s.mgmtPartitions)
	s.handle(http.MethodGet, access.RoutingPath, func(c echo.Context) error {
		if s.cfg.Routing == nil {
			return echo.ErrNotFound
		}
		doc, err := s.cfg.Routing(c.Request().Context())
		if err != nil {
			return err
		}
		return writeDoc(c, http.StatusOK, doc)
	})
	s.handle(http.MethodDelete, managementPrefix+"/members/:name", s.mgmtRemoveMember)
	s.handle(http.MethodPatch, managementPrefix+"/partitions", s.mgmtRebalances)
	s.handle(http.MethodPost, managementPrefix+operations.Path, s.mgmtRebalances)
	s.handle(http.MethodGet, managementPrefix+operations.Path, s.mgmtRebalances)
	s.handle(http.MethodGet, managementPrefix+operations.Path+"/:id", s.mgmtRebalances)
	s.handle(http.MethodGet, managementPrefix+"/backup", func(c echo.Context) error {
		if s.cfg.Backup == nil {
			return echo.ErrNotFound
		}
		return s.cfg.Backup(c.Response(), c.Request()) // an error before the first byte is answered
	})

	// The API's OpenAPI document, and Swagger UI showing it (package
	// openapi). Both are static and need no credentials.
	s.fixed(kvPrefix+openAPIPath, map[string]echo.HandlerFunc{
		http.MethodGet: s.openAPIDocument,
	})
	s.handle(http.MethodGet, docsPath, func(c echo.Context) error {
		return c.Redirect(http.StatusMovedPermanently, docsPath+"/")
	})
	ui := echo.WrapHandler(openapi.SwaggerUI(docsPath+"/", kvPrefix+openAPIPath))
	s.handle(http.MethodGet, docsPath+"/*", ui)
	s.handle(http.MethodHead, docsPath+"/*", ui)

	// The web console (package console), where / leads a browser. Its
	// files are static and need no credentials; every call its page makes
	// goes to the API above with the user's.
	toConsole := func(c echo.Context) error { return c.Redirect(http.StatusFound, consolePath+"/") }
	s.handle(http.MethodGet, "/", toConsole)
	s.handle(http.MethodHead, "/", toConsole)
	s.handle(http.MethodGet, consolePath, func(c echo.Context) error {
		return c.Redirect(http.StatusMovedPermanently, consolePath+"/")
	})
	page := echo.WrapHandler(console.Handler(consolePath + "/"))
	s.handle(http.MethodGet, consolePath+"/*", page)
	s.handle(http.MethodHead, consolePath+"/*", page)
}

// metrics is GET /metrics: the node's metrics (Config.Metrics), 404 on a
// server built without.
func (s *Server) metrics(c echo.Context) error {
	if s.cfg.Metrics == nil {
		return echo.ErrNotFound
	}
	s.cfg.Metrics.ServeHTTP(c.Response(), c.Request())
	return nil
}

// openAPIDocument is GET /kv/v1/openapi.json: the OpenAPI 3 document of
// this API.
func (s *Server) openAPIDocument(c echo.Context) error {
	return writeJSON(c, http.StatusOK, openapi.Document())
}

// apiPrefix is the prefix of /kv/v1 the request used: /geode/v1 through
// the alias, else /kv/v1.
func apiPrefix(c echo.Context) string {
	if p := middleware.AliasUsed(c); p != "" {
		return p
	}
	return kvPrefix
}

// handle registers h for method and path and remembers the method for the
// path's Allow header.
func (s *Server) handle(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	s.echo.Add(method, path, h, m...)
	s.allow[path] = append(s.allow[path], method)
}

// fixed registers a fixed path that sits beside a parameter route (see
// routes). It takes every method Echo knows, so the router never falls back
// to the parameter route: the methods in handlers are served, OPTIONS answers
// 204 with Allow as Echo does for its own routes, and the rest answer 405.
func (s *Server) fixed(path string, handlers map[string]echo.HandlerFunc) {
	for method := range handlers {
		s.allow[path] = append(s.allow[path], method)
	}
	s.echo.Any(path, func(c echo.Context) error {
		if h, ok := handlers[c.Request().Method]; ok {
			return h(c)
		}
		if c.Request().Method == http.MethodOptions {
			c.Response().Header().Set(echo.HeaderAllow, s.allowHeader(path, ""))
			return c.NoContent(http.StatusNoContent)
		}
		return echo.ErrMethodNotAllowed // handleError adds Allow for this path
	})
}

// allowHeader is the Allow header for path: OPTIONS (which Echo always
// serves) and the registered methods except the excluded one, in Echo's
// order, so that every 405 of the server reads alike.
func (s *Server) allowHeader(path, except string) string {
	methods := []string{http.MethodOptions}
	for _, m := range s.allow[path] {
		if m != except && !slices.Contains(methods, m) {
			methods = append(methods, m)
		}
	}
	slices.Sort(methods[1:])
	return strings.Join(methods, ", ")
}

// notReserved keeps the fixed words under /kv/v1 (queries, functions,
// servers, ping, watch; region.ValidateName refuses them as region names) from
// being served as regions when the router falls back to a /:region route,
// e.g. GET /kv/v1/queries before the query endpoints exist, or
// GET /kv/v1/servers/x. Such a request is a path that does not exist: 404.
func notReserved(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		name, err := pathParam(c, "region")
		if err != nil {
			return err
		}
		switch name {
		case "queries", "functions", "servers", "ping", "watch":
			return echo.ErrNotFound
		}
		return next(c)
	}
}
