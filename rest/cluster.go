package rest

import (
	"net/http"
	"slices"

	"github.com/kvnode/kvnode/rest/operations"
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
	c.Response().Header().Set(echo.HeaderLocation, kvBase(c)+"/servers")
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

// mgmtPartitions is GET /management/v1/partitions: the partition table
// (group, buckets, members) and each group's leader and applied index.
func (s *Server) mgmtPartitions(c echo.Context) error {
	if s.cluster == nil {
		return echo.ErrNotFound
	}
	view, err := s.cluster.PartitionsView(c.Request().Context())
	if err != nil {
		return err
	}
	if view.Groups == nil {
		view.Groups = []PartitionView{}
	}
	for i := range view.Groups {
		g := &view.Groups[i]
		g.Buckets = nonNil(g.Buckets)
		g.Members = nonNil(g.Members)
		g.Voters = nonNil(g.Voters)
		g.NonVoters = nonNil(g.NonVoters)
	}
	return writeDoc(c, http.StatusOK, view)
}

// mgmtRemoveMember is DELETE /management/v1/members/{name}: a member gone
// for good leaves the cluster now (Config.RemoveMember; 404 without).
func (s *Server) mgmtRemoveMember(c echo.Context) error {
	if s.cfg.RemoveMember == nil {
		return echo.ErrNotFound
	}
	if err := s.cfg.RemoveMember(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return writeDoc(c, http.StatusOK, mgmtMessage("member "+c.Param("name")+" removed; its partition replicas move to the other members"))
}

// nonNil makes an absent list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// ready is GET|HEAD /readyz: 200 with an empty body when the node has
// joined a cluster whose control group has a leader, and has applied the
// leader's commit index (a read barrier, bounded by the request deadline);
// else 503 with the cause. Like /kv/v1/ping and /livez (liveness: the
// process serves HTTP) it needs no credentials, for probes.
func (s *Server) ready(c echo.Context) error {
	if err := s.store.Ready(c.Request().Context()); err != nil {
		return err
	}
	return c.NoContent(http.StatusOK)
}

// The rebalance operations (package rest/operations says what is
// answered), 404 without Config.Rebalances: POST starts one (202), PATCH
// /management/v1/partitions {"groups": N} starts one that grows the
// partition groups to N first, GET lists them or reads one.
func (s *Server) mgmtRebalances(c echo.Context) error {
	ctx, reb := c.Request().Context(), s.cfg.Rebalances
	if reb == nil || s.cluster == nil {
		return echo.ErrNotFound
	}
	switch id := c.Param("id"); {
	case c.Request().Method == http.MethodGet && id != "":
		op, err := reb.Get(ctx, id)
		if err != nil {
			return err
		}
		return writeDoc(c, http.StatusOK, operations.One(op, managementPrefix))
	case c.Request().Method == http.MethodGet:
		ops, err := reb.List(ctx)
		if err != nil {
			return err
		}
		return writeDoc(c, http.StatusOK, operations.All(ops, managementPrefix))
	}
	groups := 0
	if c.Request().Method == http.MethodPatch {
		body, err := s.readJSONBody(c)
		if err != nil {
			return err
		}
		view, err := s.cluster.PartitionsView(ctx)
		if err != nil {
			return err
		}
		if groups, err = operations.GroupsRequest(body, view.PartitionGroups); err != nil {
			return err
		}
	}
	op, err := reb.Start(ctx, groups)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, managementPrefix+operations.Path+"/"+op.ID)
	return writeDoc(c, http.StatusAccepted, operations.Started(op, managementPrefix))
}
