package rest

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/input"
)

// The handlers of /management/v1/regions, in the shape of Geode's cluster
// management API: answers are {"statusCode":"OK",...}; errors are
// {"cause":...} like everywhere else.

// mgmtStatusOK is the statusCode of every successful management answer.
const mgmtStatusOK = "OK"

// mgmtListRegions is GET /management/v1/regions.
func (s *Server) mgmtListRegions(c echo.Context) error {
	cons, err := consistency(c)
	if err != nil {
		return err
	}
	infos, err := s.store.Regions(c.Request().Context(), cons)
	if err != nil {
		return err
	}
	if infos == nil {
		infos = []region.Info{}
	}
	return writeDoc(c, http.StatusOK, struct {
		StatusCode string        `json:"statusCode"`
		Result     []region.Info `json:"result"`
	}{mgmtStatusOK, infos})
}

// mgmtGetRegion is GET /management/v1/regions/{name}.
func (s *Server) mgmtGetRegion(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	cons, err := consistency(c)
	if err != nil {
		return err
	}
	infos, err := s.store.Regions(c.Request().Context(), cons)
	if err != nil {
		return err
	}
	for _, info := range infos {
		if info.Name == name {
			return writeDoc(c, http.StatusOK, struct {
				StatusCode string      `json:"statusCode"`
				Result     region.Info `json:"result"`
			}{mgmtStatusOK, info})
		}
	}
	return fmt.Errorf("region %q: %w", name, region.ErrRegionNotFound)
}

// mgmtCreateRegion is POST /management/v1/regions with
// {"name":"orders","type":"REPLICATE"}: 201 and the region's Location.
func (s *Server) mgmtCreateRegion(c echo.Context) error {
	body, err := s.readJSONBody(c)
	if err != nil {
		return err
	}
	info, err := input.ParseRegionConfig(body)
	if err != nil {
		return err
	}
	if err := s.store.CreateRegion(c.Request().Context(), info); err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation,
		baseURL(c)+managementPrefix+"/regions/"+url.PathEscape(info.Name))
	return writeDoc(c, http.StatusCreated, mgmtMessage("region "+info.Name+" created"))
}

// mgmtAlterRegion is PATCH /management/v1/regions/{name} with
// {"entryTimeToLive":30}: the region's new default entry time-to-live, for
// writes after the change. 200 with the region's description.
func (s *Server) mgmtAlterRegion(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	body, err := s.readJSONBody(c)
	if err != nil {
		return err
	}
	ttl, err := input.ParseEntryTimeToLive(body)
	if err != nil {
		return err
	}
	if err := s.store.AlterRegion(c.Request().Context(), name, ttl); err != nil {
		return err
	}
	return s.mgmtGetRegion(c)
}

// mgmtDeleteRegion is DELETE /management/v1/regions/{name}: the region and
// all its entries are destroyed.
func (s *Server) mgmtDeleteRegion(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	if err := s.store.DestroyRegion(c.Request().Context(), name); err != nil {
		return err
	}
	return writeDoc(c, http.StatusOK, mgmtMessage("region "+name+" deleted"))
}

// mgmtResult is a management answer without a result document.
type mgmtResult struct {
	StatusCode    string `json:"statusCode"`
	StatusMessage string `json:"statusMessage"`
}

func mgmtMessage(msg string) mgmtResult {
	return mgmtResult{StatusCode: mgmtStatusOK, StatusMessage: msg}
}
