package store

import (
	"context"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/store/raftgroup"
)

// host is the store as package reconcile's loops see it (reconcile.Host).
type host struct{ s *Store }

func (h host) Control() *raftgroup.Group                         { return h.s.groups.control() }
func (h host) Group(gid uint64) *raftgroup.Group                 { return h.s.groups.get(gid) }
func (h host) Groups() []*raftgroup.Group                        { return h.s.groups.sorted() }
func (h host) DropPartition(g *raftgroup.Group)                  { h.s.groups.drop(g) }
func (h host) PartitionsSynced()                                 { h.s.router.SyncIndexes() }
func (h host) CaughtUp(g *raftgroup.Group, srv raft.Server) bool { return h.s.caughtUp(g, srv) }

func (h host) RemoveFromControl(ctx context.Context, id, reason string) error {
	return h.s.removeFromControl(ctx, h.s.groups.control(), id, reason)
}

func (h host) OpenPartition(gid uint64, p int) (*raftgroup.Group, error) {
	return h.s.groups.openPartition(gid, p)
}

func (h host) Table() (partition.Table, uint64, bool) { return h.s.router.view.get() }

func (h host) CASTable(ctx context.Context, expect uint64, t partition.Table) (uint64, error) {
	return h.s.router.casTable(ctx, expect, t)
}

func (h host) Status(ctx context.Context, addr string) (string, []raftgroup.Status, error) {
	ns, err := h.s.client.status(ctx, addr)
	return ns.Name, ns.Groups, err
}
