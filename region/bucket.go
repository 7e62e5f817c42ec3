package region

import "hash/fnv"

// Buckets is the number of buckets keys hash into, as in Geode. A
// partitioned region's keys are placed by bucket (package partition), and
// a partition group's state machine serves the buckets it owns (package
// fsm), so the hash is vocabulary both share.
const Buckets = 113

// Bucket is fnv64a(key bytes) mod Buckets.
func Bucket(key string) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum64() % Buckets)
}
