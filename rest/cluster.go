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

// mgmtCluster is GET /management/v1/cluster: the control group's leader and
// every member with its gossip status and Raft suffrage, so operators (and
// tests) can see who leads and who is in.
func (s *Server) mgmtCluster(c echo.Context) error {
	if s.cluster == nil {
		return echo.ErrNotFound
	}
	view, err := s.cluster.ClusterView(c.Request().Context())
	if err != nil {
		return err
	}
	if view.Members == nil {
		view.Members = []MemberView{}
	}
	for i := range view.Members {
		if view.Members[i].Groups == nil {
			view.Members[i].Groups = []string{}
		}
	}
	return writeDoc(c, http.StatusOK, view)
}
