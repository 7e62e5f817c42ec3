package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/input"
)

// The handlers of /kv/v1/queries (rest-details.md, Queries): named queries
// are stored in the control group and run on any node; an ad-hoc query runs
// once. Every failure of a query's execution is a 500 with the cause, except
// that a cluster without a leader stays a 503 a client can retry.

// listQueries is GET /kv/v1/queries: {"queries":[{"id","oql"}]}.
func (s *Server) listQueries(c echo.Context) error {
	cons, err := consistency(c)
	if err != nil {
		return err
	}
	qs, err := s.store.Queries(c.Request().Context(), cons)
	if err != nil {
		return err
	}
	if qs == nil {
		qs = []region.NamedQuery{}
	}
	c.Response().Header().Set(echo.HeaderLocation, kvBase(c)+"/queries")
	return writeDoc(c, http.StatusOK, struct {
		Queries []region.NamedQuery `json:"queries"`
	}{qs})
}

// queryText reads ?q=, which must be present and not empty; a query sent
// in the body instead is refused with a hint.
func queryText(c echo.Context) (string, error) {
	q, ok := queryParam(c, "q")
	if ok && strings.TrimSpace(q) != "" {
		return q, nil
	}
	if hasBody(c) {
		return "", fmt.Errorf("%w: the query text goes in the URL parameter q, not in the request body", region.ErrInvalid)
	}
	return "", fmt.Errorf("%w: the URL parameter q (the OQL text) is required", region.ErrInvalid)
}

// hasBody reports whether the request came with a body.
func hasBody(c echo.Context) bool {
	req := c.Request()
	return req.ContentLength > 0 || req.ContentLength < 0 && req.Body != nil && req.Body != http.NoBody
}

// checkSyntax parses text for storing: a syntax error is the client's, 400.
func (s *Server) checkSyntax(text string) error {
	if _, err := s.store.CompileQuery(text); err != nil {
		return fmt.Errorf("%w: %v", region.ErrInvalid, err)
	}
	return nil
}

// queryURL is <base>/kv/v1/queries/{id}.
func queryURL(c echo.Context, id string) string {
	return kvBase(c) + "/queries/" + url.PathEscape(id)
}

// createQuery is POST /kv/v1/queries?id=ID&q=OQL: 201 with Location; an
// existing id is 409 with {"id","oql"} of the stored query.
func (s *Server) createQuery(c echo.Context) error {
	id, ok := queryParam(c, "id")
	if !ok || id == "" {
		return fmt.Errorf("%w: the URL parameter id (the query's name) is required", region.ErrInvalid)
	}
	text, err := queryText(c)
	if err != nil {
		return err
	}
	if err := s.checkSyntax(text); err != nil {
		return err
	}
	err = s.store.CreateQuery(c.Request().Context(), id, text)
	var ce *region.ConflictError
	if errors.As(err, &ce) && ce.Current != nil {
		c.Response().Header().Set(echo.HeaderLocation, queryURL(c, id))
		return writeJSON(c, http.StatusConflict, ce.Current)
	}
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, queryURL(c, id))
	return c.NoContent(http.StatusCreated)
}

// updateQuery is PUT /kv/v1/queries/{id}?q=OQL: 200, empty.
func (s *Server) updateQuery(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	text, err := queryText(c)
	if err != nil {
		return err
	}
	if err := s.checkSyntax(text); err != nil {
		return err
	}
	if err := s.store.UpdateQuery(c.Request().Context(), id, text); err != nil {
		return err
	}
	return c.NoContent(http.StatusOK)
}

// deleteQuery is DELETE /kv/v1/queries/{id}: 200, empty.
func (s *Server) deleteQuery(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	if err := s.store.DeleteQuery(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusOK)
}

// runQuery is POST /kv/v1/queries/{id} with the bind values as the body.
func (s *Server) runQuery(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	cons, err := consistency(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	nq, err := s.store.NamedQuery(ctx, cons, id)
	if err != nil {
		return err
	}
	var args []input.BindArg
	if hasBody(c) {
		body, err := s.readJSONBody(c)
		if err != nil {
			return err
		}
		if args, err = input.ParseBindArgs(body); err != nil {
			return err
		}
	}
	q, err := s.store.CompileQuery(nq.OQL)
	if err != nil {
		return queryFailed(ctx, s.cfg.MaxQueryTime, err)
	}
	if err := s.authorizeRegions(c, q.Regions()); err != nil {
		return err
	}
	params := make([]any, len(args))
	for i, a := range args {
		if params[i], err = oql.Bind(a.Type, a.Value); err != nil {
			return queryFailed(ctx, s.cfg.MaxQueryTime, fmt.Errorf("bind value %d: %w", i+1, err))
		}
	}
	if err := q.CheckBinds(fmt.Sprintf("query %q", id), len(params)); err != nil {
		return queryFailed(ctx, s.cfg.MaxQueryTime, err)
	}
	return s.execute(c, cons, q, params)
}

// adhocQuery is GET /kv/v1/queries/adhoc?q=OQL.
func (s *Server) adhocQuery(c echo.Context) error {
	text, ok := queryParam(c, "q")
	if !ok || strings.TrimSpace(text) == "" {
		return fmt.Errorf("%w: the URL parameter q (the OQL text) is required", region.ErrInvalid)
	}
	cons, err := consistency(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	q, err := s.store.CompileQuery(text)
	if err != nil {
		return queryFailed(ctx, s.cfg.MaxQueryTime, err)
	}
	if err := s.authorizeRegions(c, q.Regions()); err != nil {
		return err
	}
	if q.Params() > 0 {
		return queryFailed(ctx, s.cfg.MaxQueryTime, fmt.Errorf("%w: an ad-hoc query has no bind values, but this one uses $%d", oql.ErrBind, q.Params()))
	}
	return s.execute(c, cons, q, nil)
}

// execute runs q and writes its result array.
func (s *Server) execute(c echo.Context, cons region.Consistency, q *oql.Query, params []any) error {
	ctx := c.Request().Context()
	res, err := s.store.Query(ctx, cons, q, params, oql.Options{MaxRows: s.cfg.MaxQueryRows})
	if err != nil {
		return queryFailed(ctx, s.cfg.MaxQueryTime, err)
	}
	body, err := res.MarshalJSON()
	if err != nil {
		return queryFailed(ctx, s.cfg.MaxQueryTime, err)
	}
	return writeJSON(c, http.StatusOK, body)
}

// queryError is a query that failed while running: always a 500.
type queryError struct{ err error }

func (e *queryError) Error() string { return e.err.Error() }
func (e *queryError) Unwrap() error { return e.err }

// queryFailed classifies a query's failure: a group without a leader stays
// retryable (503); a timeout says which limit it hit; everything else is the
// query's own failure, a 500 (rest-details.md).
func queryFailed(ctx context.Context, limit time.Duration, err error) error {
	switch {
	case errors.Is(err, region.ErrNoLeader), errors.Is(err, region.ErrNotLeader), errors.Is(err, region.ErrIndeterminate):
		if ctx.Err() == nil {
			return err
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("the query ran longer than the maximum query time (%s) and was cancelled: %w", limit, err)
	}
	return &queryError{err: err}
}
