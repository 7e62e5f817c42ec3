package partition

import "github.com/kvnode/kvnode/region"

// Buckets is the number of buckets keys hash into, as in Geode
// (region.Buckets: the state machine knows buckets too).
const Buckets = region.Buckets

// Bucket is fnv64a(key bytes) mod Buckets (region.Bucket).
func Bucket(key string) int { return region.Bucket(key) }

// ControlGroup is the ID of Raft group 0, the control group (region
// definitions, metadata, the partition table, replicated regions):
// partition groups are numbered from 1.
const ControlGroup uint64 = 0

// GroupOf is the partition group of bucket b among groups groups:
// 1 + b mod groups.
func GroupOf(bucket, groups int) uint64 {
	return 1 + uint64(bucket%groups)
}

// GroupForKey is GroupOf(Bucket(key), groups).
func GroupForKey(key string, groups int) uint64 {
	return GroupOf(Bucket(key), groups)
}

// BucketsOf lists, ascending, the buckets of group id among groups groups.
func BucketsOf(id uint64, groups int) []int {
	var out []int
	for b := 0; b < Buckets; b++ {
		if GroupOf(b, groups) == id {
			out = append(out, b)
		}
	}
	return out
}
