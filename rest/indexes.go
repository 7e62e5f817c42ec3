package rest

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/input"
)

// The handlers of /management/v1/regions/{region}/indexes: secondary
// indexes, defined as Geode defines them (a name, an expression and the
// FROM clause it is evaluated over) and kept in the control group.

// mgmtListIndexes is GET /management/v1/regions/{region}/indexes.
func (s *Server) mgmtListIndexes(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	cons, err := consistency(c)
	if err != nil {
		return err
	}
	defs, err := s.store.Indexes(c.Request().Context(), cons, name)
	if err != nil {
		return err
	}
	if defs == nil {
		defs = []region.IndexInfo{}
	}
	return writeDoc(c, http.StatusOK, struct {
		StatusCode string             `json:"statusCode"`
		Result     []region.IndexInfo `json:"result"`
	}{mgmtStatusOK, defs})
}

// mgmtGetIndex is GET /management/v1/regions/{region}/indexes/{index}.
func (s *Server) mgmtGetIndex(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	idx, err := pathParam(c, "index")
	if err != nil {
		return err
	}
	cons, err := consistency(c)
	if err != nil {
		return err
	}
	defs, err := s.store.Indexes(c.Request().Context(), cons, name)
	if err != nil {
		return err
	}
	for _, d := range defs {
		if d.Name == idx {
			return writeDoc(c, http.StatusOK, struct {
				StatusCode string           `json:"statusCode"`
				Result     region.IndexInfo `json:"result"`
			}{mgmtStatusOK, d})
		}
	}
	return fmt.Errorf("index %q on region %q: %w", idx, name, region.ErrKeyNotFound)
}

// mgmtCreateIndex is POST /management/v1/regions/{region}/indexes with
// {"name":..,"expression":"o.customerId","from":"/orders o"}: 201 and the
// index's Location; an existing name is 409 with its definition.
func (s *Server) mgmtCreateIndex(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	body, err := s.readJSONBody(c)
	if err != nil {
		return err
	}
	def, err := input.ParseIndex(name, body)
	if err != nil {
		return err
	}
	err = s.store.CreateIndex(c.Request().Context(), name, def)
	loc := baseURL(c) + managementPrefix + "/regions/" + url.PathEscape(name) + "/indexes/" + url.PathEscape(def.Name)
	var ce *region.ConflictError
	if errors.As(err, &ce) && ce.Current != nil {
		c.Response().Header().Set(echo.HeaderLocation, loc)
		return writeJSON(c, http.StatusConflict, ce.Current)
	}
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, loc)
	return writeDoc(c, http.StatusCreated, mgmtMessage("index "+def.Name+" created on region "+name))
}

// mgmtDeleteIndex is DELETE /management/v1/regions/{region}/indexes/{index}.
func (s *Server) mgmtDeleteIndex(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	idx, err := pathParam(c, "index")
	if err != nil {
		return err
	}
	if err := s.store.DeleteIndex(c.Request().Context(), name, idx); err != nil {
		return err
	}
	return writeDoc(c, http.StatusOK, mgmtMessage("index "+idx+" deleted from region "+name))
}
