package rebalance

import (
	"testing"

	"github.com/kvnode/kvnode/partition"
)

func table(t *testing.T, groups int, bootstrapped int) partition.Table {
	t.Helper()
	tab, err := partition.NewTable(groups, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tab.Groups {
		tab.Groups[i].Bootstrapped = i < bootstrapped
		tab.Groups[i].Members = []string{"a"}
		tab.Groups[i].Bootstrapper = "a"
	}
	return tab
}

// counts applies the plan to t and returns each group's bucket count.
func apply(t *testing.T, tab partition.Table, plan []Shift) map[uint64]int {
	t.Helper()
	owners := make([]uint64, partition.Buckets)
	for b := range owners {
		owners[b] = tab.Owner(b)
	}
	moved := map[int]bool{}
	for _, s := range plan {
		if moved[s.Bucket] || owners[s.Bucket] != s.From || s.From == s.To {
			t.Fatalf("shift %+v does not fit (owner %d, moved before %v)", s, owners[s.Bucket], moved[s.Bucket])
		}
		moved[s.Bucket] = true
		owners[s.Bucket] = s.To
	}
	out := map[uint64]int{}
	for _, o := range owners {
		out[o]++
	}
	return out
}

// TestPlanBuckets: the plan evens buckets out over the bootstrapped groups
// (⌊113/P⌋ or ⌈113/P⌉ each) and moves no more than that takes; an even
// table needs no move.
func TestPlanBuckets(t *testing.T) {
	even := table(t, 4, 4)
	if plan := PlanBuckets(even); len(plan) != 0 {
		t.Errorf("an even table: %d moves", len(plan))
	}
	for _, tc := range []struct{ from, to, bootstrapped int }{{4, 6, 6}, {4, 12, 12}, {3, 113, 113}, {4, 8, 6}} {
		tab := table(t, tc.from, tc.from)
		grown, _ := partition.NewTable(tc.to, 3)
		for i := range grown.Groups {
			grown.Groups[i].Bootstrapped, grown.Groups[i].Members, grown.Groups[i].Bootstrapper = i < tc.bootstrapped, []string{"a"}, "a"
		}
		grown.Owners = make([]uint64, partition.Buckets)
		for b := range grown.Owners {
			grown.Owners[b] = tab.Owner(b)
		}
		plan := PlanBuckets(grown)
		counts := apply(t, grown, plan)
		low, high := partition.Buckets/tc.bootstrapped, (partition.Buckets+tc.bootstrapped-1)/tc.bootstrapped
		for gid := uint64(1); gid <= uint64(tc.bootstrapped); gid++ {
			if counts[gid] < low || counts[gid] > high {
				t.Errorf("%d → %d groups: group %d ends with %d buckets, want %d or %d", tc.from, tc.to, gid, counts[gid], low, high)
			}
		}
		// The least that evens them: every group's excess over high moves.
		least := 0
		for gid := uint64(1); gid <= uint64(tc.from); gid++ {
			if n := len(tab.BucketsOf(gid)); n > high {
				least += n - high
			}
		}
		if len(plan) > least+tc.bootstrapped {
			t.Errorf("%d → %d groups: %d moves, about %d would do", tc.from, tc.to, len(plan), least)
		}
		if again := PlanBuckets(grown); len(again) != len(plan) {
			t.Errorf("the same table gave another plan")
		}
	}
}
