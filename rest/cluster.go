package rest

import (
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"
)

// ping is GET|HEAD /kv/v1/ping: 200 with an empty body whenever the REST
// service is up, whatever the state of the cluster, so health probes work.
func (s *Server) ping(c echo.Context) error {
	return c.NoContent(http.StatusOK)
}

// listServers is GET /kv/v1/servers: the sorted REST base URLs of the live
// members, from gossip.
func (s *Server) listServers(c echo.Context) error {
	urls := []string{}
	if s.members != nil {
		urls = append(urls, s.members.RESTURLs()...)
	}
	slices.Sort(urls)
	c.Response().Header().Set(echo.HeaderLocation, baseURL(c)+kvPrefix+"/servers")
	return writeDoc(c, http.StatusOK, urls)
}
