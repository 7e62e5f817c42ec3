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

// ParseKind accepts a region type in any letter case.
func ParseKind(s string) (Kind, error) {
	switch Kind(strings.ToUpper(strings.TrimSpace(s))) {
	case Replicate:
		return Replicate, nil
	case Partition:
		return Partition, nil
	}
	return "", fmt.Errorf("%w: region type %q is not REPLICATE or PARTITION", ErrInvalid, s)
}

// Info describes one region as the APIs list it.
type Info struct {
	Name string `json:"name"`
	Kind Kind   `json:"type"`
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
