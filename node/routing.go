package node

import (
	"context"
	"fmt"

	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/routing"
	"github.com/kvnode/kvnode/store"
	"github.com/kvnode/kvnode/store/regions"
)

// routingDoc answers GET /management/v1/routing (package routing) by
// joining three views: the partition table with its groups' leaders
// (store), the control group's leader and every member's REST URL
// (clusterView), and which regions are partitioned (regions).
type routingDoc struct {
	view    clusterView
	regions *regions.API
}

// Document reads the table linearizably (Store.Partitions), so that a
// client never routes by a table older than one it was already told of.
func (r routingDoc) Document(ctx context.Context) (routing.Document, error) {
	pt, err := r.view.store.Partitions(ctx)
	if err != nil {
		return routing.Document{}, fmt.Errorf("routing: the partition table: %w", err)
	}
	cv, err := r.view.ClusterView(ctx)
	if err != nil {
		return routing.Document{}, fmt.Errorf("routing: the cluster view: %w", err)
	}
	infos, err := r.regions.Regions(ctx, region.Stale)
	if err != nil {
		return routing.Document{}, fmt.Errorf("routing: the regions: %w", err)
	}
	// Only members that proved their identity: a stranger in gossip must
	// not draw a client's writes by claiming a leader's name.
	urls := map[string]string{}
	for _, m := range (trusted{r.view.members, r.view.admission}).Alive() {
		urls[m.Name] = m.RESTURL
	}
	doc := routing.Document{
		Version:     pt.Version,
		Hash:        routing.HashFNV1a64,
		Buckets:     partition.Buckets,
		Owners:      make([]uint64, partition.Buckets),
		Groups:      []routing.Group{{Group: store.ControlGroup, Leader: cv.Leader, Term: cv.Term, URL: urls[cv.Leader]}},
		Partitioned: []string{},
	}
	for _, g := range pt.Groups {
		for _, b := range g.Buckets {
			if b >= 0 && b < len(doc.Owners) {
				doc.Owners[b] = g.Group
			}
		}
		doc.Groups = append(doc.Groups, routing.Group{Group: g.Group, Leader: g.Leader, Term: g.Term, URL: urls[g.Leader]})
	}
	for _, info := range infos {
		if info.Kind == region.Partition {
			doc.Partitioned = append(doc.Partitioned, info.Name)
		}
	}
	return doc, nil
}
