package node

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/rest"
	"github.com/kvnode/kvnode/store"
	"github.com/kvnode/kvnode/store/admission"
)

// trusted is gossip's view narrowed to the members that proved their
// identity over the internal port (package admission): the servers
// /servers lists and functions run on. A stranger in gossip is listed by
// /management/v1/cluster only, as refused.
type trusted struct {
	members *cluster.Cluster
	check   *admission.Checker
}

// Alive is every alive member that proved its identity, sorted by name.
func (t trusted) Alive() []cluster.Member {
	return slices.DeleteFunc(t.members.Alive(), func(m cluster.Member) bool {
		return !t.check.Verified(m.Name, m.InternalAddr)
	})
}

// RESTURLs are the REST base URLs of the trusted members, sorted.
func (t trusted) RESTURLs() []string { return cluster.RESTURLs(t.Alive()) }

// clusterView answers GET /management/v1/cluster by joining the two views
// of membership: gossip (who is alive, where) and the control group's Raft
// configuration (who votes). Neither package knows the other's view, so the
// join happens here, where both are wired.
type clusterView struct {
	store     *store.Store
	members   *cluster.Cluster
	admission *admission.Checker
}

func (v clusterView) ClusterView(context.Context) (rest.ClusterView, error) {
	leader, servers, err := v.store.Configuration()
	if err != nil {
		return rest.ClusterView{}, err
	}
	byName := map[string]*rest.MemberView{}
	var out []*rest.MemberView
	checked := map[string]admission.Candidate{}
	for _, c := range v.admission.Candidates() {
		checked[c.Name] = c
	}
	for _, m := range v.members.Members() {
		mv := &rest.MemberView{
			Name:         m.Name,
			RESTURL:      m.RESTURL,
			InternalAddr: m.InternalAddr,
			GossipAddr:   m.GossipAddr,
			Groups:       m.Groups,
			Version:      m.Version,
			Status:       m.Status.String(),
		}
		if c, ok := checked[m.Name]; ok && c.Addr == m.InternalAddr {
			mv.Identity, mv.Reason = string(c.State), c.Reason
			if c.State != admission.Verified {
				mv.IdentitySince = c.Since.UTC().Format(time.RFC3339)
			}
		}
		byName[m.Name] = mv
		out = append(out, mv)
	}
	for _, srv := range servers {
		mv := byName[srv.ID]
		if mv == nil {
			mv = &rest.MemberView{Name: srv.ID, InternalAddr: srv.Address, Status: "unknown"}
			byName[srv.ID] = mv
			out = append(out, mv)
		}
		mv.Suffrage = "nonvoter"
		if srv.Voter {
			mv.Suffrage = "voter"
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	view := rest.ClusterView{Leader: leader, Term: controlTerm(v.store.Status()), Members: make([]rest.MemberView, 0, len(out))}
	for _, mv := range out {
		view.Members = append(view.Members, *mv)
	}
	return view, nil
}

func (v clusterView) PartitionsView(ctx context.Context) (rest.PartitionsView, error) {
	pt, err := v.store.Partitions(ctx)
	if err != nil {
		return rest.PartitionsView{}, err
	}
	out := rest.PartitionsView{
		PartitionGroups:   pt.PartitionGroups,
		ReplicationFactor: pt.ReplicationFactor,
		Buckets:           partition.Buckets,
		Groups:            make([]rest.PartitionView, 0, len(pt.Groups)),
	}
	for _, g := range pt.Groups {
		out.Groups = append(out.Groups, rest.PartitionView{
			Group:        g.Group,
			Buckets:      g.Buckets,
			Members:      g.Members,
			Leader:       g.Leader,
			Term:         g.Term,
			AppliedIndex: g.AppliedIndex,
			Voters:       g.Voters,
			NonVoters:    g.NonVoters,
		})
	}
	return out, nil
}

// controlTerm is the control group's term in a node's status (0 before
// the node has joined one).
func controlTerm(st store.NodeStatus) uint64 {
	for _, g := range st.Groups {
		if g.ID == store.ControlGroup {
			return g.Term
		}
	}
	return 0
}
