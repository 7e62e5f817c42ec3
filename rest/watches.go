package rest

import (
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/watch"
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

// continuousQuery compiles a watch's q or query (cached per node) into
// oql's continuous query: its FROM region and the test of one entry. Every
// refusal (syntax, oql.ErrNotContinuous, bind values) is the client's: 400.
func continuousQuery(st Store) watch.Compiler {
	return func(text string, binds []any) (string, watch.Matcher, error) {
		q, err := st.CompileQuery(text)
		if err == nil {
			var cq *oql.CQ
			if cq, err = oql.NewCQ(q, binds); err == nil {
				return cq.Region(), cq, nil
			}
		}
		return "", nil, fmt.Errorf("%w: %w", region.ErrInvalid, err)
	}
}
