package region

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Kind is a region's data policy, named as Geode names it.
type Kind string

const (
	// Replicate regions hold every entry on every member.
	Replicate Kind = "REPLICATE"
	// Partition regions hash their keys into buckets spread over partition groups.
	Partition Kind = "PARTITION"
)

// ParseKind reads a region type in any letter case: REPLICATE or
// PARTITION, or one of Apache Geode's region shortcuts where it has a
// meaning here, so that a Geode user's scripts keep working.
//
// Geode's shortcuts add persistence, overflow to disk and redundancy to
// the two data policies. A kvnode region always has what they ask for or
// needs none of it: every entry is in the Raft log and snapshots on disk
// (PERSISTENT), is never evicted (OVERFLOW only moves values to disk), and
// lives on --replication-factor members (REDUNDANT; a cluster setting, not
// a region's). So REPLICATE_* map to Replicate and PARTITION_* to
// Partition. The shortcuts whose meaning kvnode cannot honour are refused
// with the reason: PROXY and CACHING_PROXY regions hold no data on the
// member that defines them, LOCAL ones live on one member without
// replication, and *_HEAP_LRU ones destroy entries when the heap fills
// (Geode's REPLICATE_HEAP_LRU too: its data policy is PRELOADED, its
// eviction a local destroy).
func ParseKind(s string) (Kind, error) {
	name := strings.ToUpper(strings.TrimSpace(s))
	switch Kind(name) {
	case Replicate, Partition:
		return Kind(name), nil
	}
	if k, ok := geodeKinds[name]; ok {
		return k, nil
	}
	for _, r := range geodeRefusals {
		if r.matches(name) {
			return "", fmt.Errorf("%w: region type %q is Geode's %s; kvnode regions are REPLICATE or PARTITION", ErrInvalid, s, r.why)
		}
	}
	return "", fmt.Errorf("%w: region type %q is not REPLICATE or PARTITION (Geode's REPLICATE_* and PARTITION_* shortcuts are accepted too)", ErrInvalid, s)
}

// geodeKinds are Geode's region shortcuts that mean a kvnode kind; see
// ParseKind.
var geodeKinds = map[string]Kind{
	"REPLICATE_PERSISTENT":                    Replicate,
	"REPLICATE_OVERFLOW":                      Replicate,
	"REPLICATE_PERSISTENT_OVERFLOW":           Replicate,
	"PARTITION_REDUNDANT":                     Partition,
	"PARTITION_PERSISTENT":                    Partition,
	"PARTITION_REDUNDANT_PERSISTENT":          Partition,
	"PARTITION_OVERFLOW":                      Partition,
	"PARTITION_REDUNDANT_OVERFLOW":            Partition,
	"PARTITION_PERSISTENT_OVERFLOW":           Partition,
	"PARTITION_REDUNDANT_PERSISTENT_OVERFLOW": Partition,
}

// geodeRefusal is a family of Geode shortcuts kvnode cannot honour, and
// why, in words for the client.
type geodeRefusal struct {
	prefix, contains string
	why              string
}

func (r geodeRefusal) matches(name string) bool {
	return strings.HasPrefix(name, r.prefix) && strings.Contains(name, r.contains)
}

// geodeRefusals are checked in order: the first that matches explains.
var geodeRefusals = []geodeRefusal{
	{prefix: "CACHING_PROXY", why: "client-side caching region: kvnode has no client caches; " +
		"clients reach every region through any member's REST API"},
	{contains: "PROXY", why: "proxy region, which holds no data on the member that defines it: " +
		"every kvnode member hosts data, and a region is defined once for the whole cluster"},
	{prefix: "LOCAL", why: "local region, which lives on one member and is not replicated: " +
		"kvnode replicates every region through Raft"},
	{contains: "HEAP_LRU", why: "region that destroys entries when the heap fills: kvnode never evicts entries"},
}

// Info describes one region as the APIs list it.
type Info struct {
	Name string `json:"name"`
	Kind Kind   `json:"type"`
	// EntryTimeToLive is the region's default entry time-to-live in
	// seconds (Geode's region expiration attribute): an entry written
	// without ?ttl= expires that long after its last write. 0: never.
	EntryTimeToLive int64 `json:"entryTimeToLive,omitempty"`
}

// Entry is one key and its value, a compact JSON object.
type Entry struct {
	Key   string
	Value json.RawMessage
}

// CASPair is one compare-and-set: replace Old by New under Key.
type CASPair struct {
	Key string
	Old json.RawMessage
	New json.RawMessage
}

// Consistency selects how fresh a read must be.
type Consistency int

const (
	// Linearizable reads observe every write acknowledged before the read
	// began: the group leader confirms its leadership and the serving replica
	// waits until it has applied the leader's commit index.
	Linearizable Consistency = iota
	// Stale reads return the local replica's state at once; they may miss
	// recent writes but never see uncommitted ones.
	Stale
)

// ParseConsistency reads the ?consistency= query parameter; empty means
// Linearizable.
func ParseConsistency(s string) (Consistency, error) {
	switch strings.ToLower(s) {
	case "", "linearizable", "strong", "default":
		return Linearizable, nil
	case "stale":
		return Stale, nil
	}
	return 0, fmt.Errorf("%w: consistency %q is neither linearizable nor stale", ErrInvalid, s)
}

func (c Consistency) String() string {
	if c == Stale {
		return "stale"
	}
	return "linearizable"
}

// NamedQuery is a stored OQL query: GET /kv/v1/queries lists them.
type NamedQuery struct {
	ID  string `json:"id"`
	OQL string `json:"oql"`
}

// IndexInfo defines a secondary index, in the shape of Geode's index
// definitions: {"name":"byCustomer","expression":"o.customerId","from":"/orders o"}.
// Region and Path are filled in by the store: the region it is on and the
// member path it indexes.
type IndexInfo struct {
	Name       string   `json:"name"`
	Expression string   `json:"expression"`
	From       string   `json:"from"`
	Region     string   `json:"region,omitempty"`
	Path       []string `json:"path,omitempty"`
}
