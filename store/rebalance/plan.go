package rebalance

import (
	"slices"

	"github.com/kvnode/kvnode/partition"
)

// Shift is one bucket to move.
type Shift struct {
	Bucket int
	From   uint64
	To     uint64
}

// PlanBuckets is the moves that even out the buckets over the partition
// groups of t that are bootstrapped (a group not yet bootstrapped gets
// none yet): every such group ends with ⌊B/P⌋ or ⌈B/P⌉ buckets. It moves as
// few buckets as that takes, from the fullest groups to the emptiest,
// the highest bucket of a group first; the same table gives the same
// plan. Buckets moving now stay where they are going.
func PlanBuckets(t partition.Table) []Shift {
	var gids []uint64
	for _, g := range t.Groups {
		if g.Bootstrapped {
			gids = append(gids, g.ID)
		}
	}
	if len(gids) == 0 {
		return nil
	}
	owned := map[uint64][]int{}
	moving := map[int]bool{}
	for _, m := range t.Moves {
		moving[m.Bucket] = true
	}
	for b := 0; b < partition.Buckets; b++ {
		owner := t.Owner(b)
		if m, ok := t.Moving(b); ok {
			owner = m.To
		}
		owned[owner] = append(owned[owner], b)
	}
	// Buckets of groups not counted (not bootstrapped) go too.
	var orphans []Shift
	for gid, bs := range owned {
		if !slices.Contains(gids, gid) {
			for _, b := range bs {
				orphans = append(orphans, Shift{Bucket: b, From: gid})
			}
		}
	}
	slices.SortFunc(orphans, func(a, b Shift) int { return a.Bucket - b.Bucket })
	low := partition.Buckets / len(gids)
	extra := partition.Buckets % len(gids) // this many groups keep low+1
	// The groups that keep low+1 are those that hold the most now (then
	// the lowest ID), so as little as possible moves.
	order := slices.Clone(gids)
	slices.SortStableFunc(order, func(a, b uint64) int { return len(owned[b]) - len(owned[a]) })
	want := map[uint64]int{}
	for i, gid := range order {
		want[gid] = low
		if i < extra {
			want[gid]++
		}
	}
	var out []Shift
	var surplus []Shift // buckets leaving their group, to place
	for _, gid := range gids {
		bs := owned[gid]
		for i := len(bs) - 1; i >= 0 && len(bs) > want[gid]; i-- {
			if !moving[bs[i]] {
				surplus = append(surplus, Shift{Bucket: bs[i], From: gid})
				bs = slices.Delete(bs, i, i+1)
			}
		}
		owned[gid] = bs
	}
	surplus = append(orphans, surplus...)
	for _, s := range surplus {
		for _, gid := range gids {
			if len(owned[gid]) < want[gid] {
				owned[gid] = append(owned[gid], s.Bucket)
				s.To = gid
				out = append(out, s)
				break
			}
		}
	}
	return out
}
