package rest

import (
	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/auth"
)

// watch is GET /kv/v1/watch, answered by package watch once the client
// may read the watched region (the query's FROM region for q and query).
func (s *Server) watch(c echo.Context) error {
	return s.watches.Serve(c.Response(), c.Request(), func(name string) error {
		return s.authorize(c, auth.Permission{Resource: "DATA", Operation: "READ", Region: name})
	})
}

// CloseWatches ends every watch with an error event that carries its
// resume token. node calls it when the HTTP server shuts down
// (http.Server.RegisterOnShutdown), whose Shutdown would otherwise wait
// for streams that never end on their own.
func (s *Server) CloseWatches() { s.watches.Shutdown() }
