package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/function"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/input"
)

// Functions runs server-side functions and keeps the deployed ones
// (package function, wired by package node).
type Functions interface {
	IDs(ctx context.Context) ([]string, error)
	// Execute answers the members' results, and whether the function has
	// a result at all (without one the answer has an empty body).
	Execute(ctx context.Context, req function.Request) ([]json.RawMessage, bool, error)
	Deployments(ctx context.Context) ([]function.Deployment, error)
	Deployment(ctx context.Context, id string) (function.Deployment, bool, error)
	// Deploy stores a deployment and reports whether it is new; a bad
	// script is region.ErrInvalid, a built-in's id region.ErrKeyExists.
	Deploy(ctx context.Context, d function.Deployment) (bool, error)
	Undeploy(ctx context.Context, id string) error // unknown → ErrKeyNotFound
	// Permission is what running the function needs; function.ErrUnknownFunction if none.
	Permission(ctx context.Context, id string) (string, error)
}

// functionsOrNotFound returns the service, or a 404 on a server built
// without one.
func (s *Server) functionsOrNotFound() (Functions, error) {
	if s.cfg.Functions == nil {
		return nil, echo.ErrNotFound
	}
	return s.cfg.Functions, nil
}

// listFunctions is GET /kv/v1/functions: {"functions":[ids]}.
func (s *Server) listFunctions(c echo.Context) error {
	fs, err := s.functionsOrNotFound()
	if err != nil {
		return err
	}
	ids, err := fs.IDs(c.Request().Context())
	if err != nil {
		return err
	}
	if ids == nil {
		ids = []string{}
	}
	c.Response().Header().Set(echo.HeaderLocation, kvBase(c)+"/functions")
	return writeDoc(c, http.StatusOK, struct {
		Functions []string `json:"functions"`
	}{ids})
}

// runFunction is POST /kv/v1/functions/{id}?onRegion|onMembers|onGroups&filter.
func (s *Server) runFunction(c echo.Context) error {
	fs, err := s.functionsOrNotFound()
	if err != nil {
		return err
	}
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	perm, err := fs.Permission(c.Request().Context(), id)
	if err != nil {
		return err
	}
	need, err := auth.ParsePermission(perm)
	if err != nil {
		return fmt.Errorf("function %s declares a bad permission: %w", id, err)
	}
	if err := s.authorize(c, need); err != nil {
		return err
	}
	req := function.Request{ID: id}
	if v, ok := queryParam(c, "onRegion"); ok {
		if v == "" || strings.Contains(v, ",") {
			return fmt.Errorf("%w: onRegion names one region", region.ErrInvalid)
		}
		req.OnRegion = v
	}
	if req.OnMembers, err = listParam(c, "onMembers"); err != nil {
		return err
	}
	if req.OnGroups, err = listParam(c, "onGroups"); err != nil {
		return err
	}
	if req.Filter, err = listParam(c, "filter"); err != nil {
		return err
	}
	if hasBody(c) {
		body, err := s.readJSONBody(c)
		if err != nil {
			return err
		}
		if req.Args, err = function.ParseArgs(body); err != nil {
			return err
		}
	}
	results, hasResult, err := fs.Execute(c.Request().Context(), req)
	if err != nil {
		return functionFailed(c.Request().Context(), s.cfg.FunctionTimeout, err)
	}
	c.Response().Header().Set(echo.HeaderLocation, kvBase(c)+"/functions/"+url.PathEscape(id))
	if !hasResult {
		return c.NoContent(http.StatusOK)
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, r := range results {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r)
	}
	b.WriteByte(']')
	return writeJSON(c, http.StatusOK, b.Bytes())
}

// functionError is a function that failed while running: a 500.
type functionError struct{ err error }

func (e *functionError) Error() string { return e.err.Error() }
func (e *functionError) Unwrap() error { return e.err }

// functionFailed keeps the request errors (400, 404) and a leaderless
// cluster (503) as they are; a failure on a member, or a timeout, is a 500.
func functionFailed(ctx context.Context, limit interface{ String() string }, err error) error {
	switch {
	case errors.Is(err, region.ErrInvalid), errors.Is(err, function.ErrUnknownFunction), errors.Is(err, function.ErrUnknownTarget):
		return err
	}
	var me *function.MemberError
	if !errors.As(err, &me) {
		switch {
		case errors.Is(err, region.ErrNoLeader), errors.Is(err, region.ErrNotLeader), errors.Is(err, region.ErrIndeterminate):
			if ctx.Err() == nil {
				return err
			}
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("the function ran longer than --function-timeout (%s): %w", limit, err)
	}
	return &functionError{err: err}
}

// mgmtListFunctions is GET /management/v1/functions: the deployments.
func (s *Server) mgmtListFunctions(c echo.Context) error {
	fs, err := s.functionsOrNotFound()
	if err != nil {
		return err
	}
	ds, err := fs.Deployments(c.Request().Context())
	if err != nil {
		return err
	}
	if ds == nil {
		ds = []function.Deployment{}
	}
	return writeDoc(c, http.StatusOK, struct {
		StatusCode string                `json:"statusCode"`
		Result     []function.Deployment `json:"result"`
	}{mgmtStatusOK, ds})
}

// mgmtGetFunction is GET /management/v1/functions/{id}.
func (s *Server) mgmtGetFunction(c echo.Context) error {
	fs, err := s.functionsOrNotFound()
	if err != nil {
		return err
	}
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	d, ok, err := fs.Deployment(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("deployed function %q: %w", id, region.ErrKeyNotFound)
	}
	return writeDoc(c, http.StatusOK, struct {
		StatusCode string              `json:"statusCode"`
		Result     function.Deployment `json:"result"`
	}{mgmtStatusOK, d})
}

// mgmtPutFunction is PUT /management/v1/functions/{id} with
// {"source":..,"permission":..,"dataAware":..,"hasResult":..,"description":..}:
// 201 when new, 200 when it replaced a deployment.
func (s *Server) mgmtPutFunction(c echo.Context) error {
	fs, err := s.functionsOrNotFound()
	if err != nil {
		return err
	}
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	body, err := s.readJSONBody(c)
	if err != nil {
		return err
	}
	spec, err := input.ParseFunctionSpec(body)
	if err != nil {
		return err
	}
	created, err := fs.Deploy(c.Request().Context(), function.Deployment{
		ID: id, Source: spec.Source, Permission: spec.Permission, DataAware: spec.DataAware, HasResult: spec.HasResult, Description: spec.Description, Timeout: spec.Timeout,
	})
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, baseURL(c)+managementPrefix+"/functions/"+url.PathEscape(id))
	if created {
		return writeDoc(c, http.StatusCreated, mgmtMessage("function "+id+" deployed"))
	}
	return writeDoc(c, http.StatusOK, mgmtMessage("function "+id+" replaced"))
}

// mgmtDeleteFunction is DELETE /management/v1/functions/{id}.
func (s *Server) mgmtDeleteFunction(c echo.Context) error {
	fs, err := s.functionsOrNotFound()
	if err != nil {
		return err
	}
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	if err := fs.Undeploy(c.Request().Context(), id); err != nil {
		return err
	}
	return writeDoc(c, http.StatusOK, mgmtMessage("function "+id+" removed"))
}
