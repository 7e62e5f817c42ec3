package store

import (
	"context"
	"sync"
	"time"

	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/raftgroup"
)

// PartitionStatus describes one partition group for operators.
type PartitionStatus struct {
	Group        uint64
	Buckets      []int
	Members      []string // from the table; the first is the preferred leader
	Bootstrapped bool
	// Leader, Term and AppliedIndex come from the group's leader, as
	// reported by a node that hosts it; empty and 0 when no member answered.
	Leader       string
	Term         uint64
	AppliedIndex uint64
	Voters       []string
	NonVoters    []string
}

// PartitionTable is the partition table with what the groups' leaders say.
type PartitionTable struct {
	Version           uint64 // the table's version in the control group
	PartitionGroups   int
	ReplicationFactor int
	Groups            []PartitionStatus
}

// Partitions reports the partition table (read linearizably from group 0)
// and, for every group, its leader's view, asking the members that host it.
func (s *Store) Partitions(ctx context.Context) (PartitionTable, error) {
	if _, err := s.router.controlRead(ctx, region.Linearizable); err != nil {
		return PartitionTable{}, err
	}
	t, version, ok := s.router.view.get()
	if !ok {
		return PartitionTable{}, errNoTable
	}
	leaders := s.groupLeaders(ctx, t)
	out := PartitionTable{Version: version, PartitionGroups: t.P(), ReplicationFactor: t.RF}
	for _, pg := range t.Groups {
		ps := PartitionStatus{
			Group:        pg.ID,
			Buckets:      t.BucketsOf(pg.ID),
			Members:      pg.Members,
			Bootstrapped: pg.Bootstrapped,
		}
		if gs, ok := leaders[pg.ID]; ok {
			ps.Leader, ps.Term, ps.AppliedIndex, ps.Voters, ps.NonVoters = gs.Leader, gs.Term, gs.AppliedIndex, gs.Voters, gs.NonVoters
		}
		out.Groups = append(out.Groups, ps)
	}
	return out, nil
}

// groupLeaders asks every alive member that hosts a partition group (this
// node directly) for its groups' status and keeps the leaders' reports.
func (s *Store) groupLeaders(ctx context.Context, t partition.Table) map[uint64]raftgroup.Status {
	out := map[uint64]raftgroup.Status{}
	var mu sync.Mutex
	keep := func(ns NodeStatus) {
		mu.Lock()
		defer mu.Unlock()
		for _, gs := range ns.Groups {
			if gs.ID != controlGroup && gs.State == "Leader" {
				out[gs.ID] = gs
			}
		}
	}
	keep(s.Status())
	hosts := map[string]bool{}
	for _, pg := range t.Groups {
		for _, m := range pg.Members {
			hosts[m] = true
		}
	}
	addrs := s.router.view.internalAddrs()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for name := range hosts {
		addr, ok := addrs[name]
		if !ok || name == s.name {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ns, err := s.client.status(ctx, addr); err == nil {
				keep(ns)
			}
		}()
	}
	wg.Wait()
	return out
}
