package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/region"
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
	info, err := parseRegionConfig(body)
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

// parseRegionConfig reads the body of a region creation strictly: unknown
// members are refused rather than ignored, because a client that sends a
// setting we do not honour (a Geode region attribute, say) must learn so.
func parseRegionConfig(body []byte) (region.Info, error) {
	var cfg struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return region.Info{}, fmt.Errorf(`%w: a region is {"name":"...","type":"REPLICATE"|"PARTITION"}: %v`, region.ErrInvalid, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return region.Info{}, fmt.Errorf("%w: malformed JSON: data after the region object", region.ErrInvalid)
	}
	if err := region.ValidateName(cfg.Name); err != nil {
		return region.Info{}, err
	}
	kind, err := region.ParseKind(cfg.Type)
	if err != nil {
		return region.Info{}, err
	}
	return region.Info{Name: cfg.Name, Kind: kind}, nil
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
