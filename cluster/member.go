package cluster

import (
	"fmt"
	"time"
)

// Status is what gossip last said about a member.
type Status int

const (
	// StatusAlive: the member answers gossip. memberlist's "suspect" state
	// counts as alive here: suspicion is refuted or confirmed within seconds,
	// and nothing above gossip should act on it.
	StatusAlive Status = iota
	// StatusFailed: failure detection declared the member dead; it did not
	// say goodbye, so it may come back with its data.
	StatusFailed
	// StatusLeft: the member announced a graceful leave.
	StatusLeft
)

// String returns "alive", "failed" or "left".
func (s Status) String() string {
	switch s {
	case StatusAlive:
		return "alive"
	case StatusFailed:
		return "failed"
	case StatusLeft:
		return "left"
	default:
		return fmt.Sprintf("Status(%d)", int(s))
	}
}

// Meta is what a node advertises about itself through gossip. It travels in
// memberlist's node metadata, which is limited to 512 bytes once encoded
// (see meta.go); New rejects a Meta that does not fit.
type Meta struct {
	RESTURL         string   // advertised REST base URL, e.g. "http://10.0.0.5:8080"
	InternalAddr    string   // host:port of Raft and node-to-node RPC
	Groups          []string // member groups (--groups)
	BootstrapExpect int      // --bootstrap-expect of that node
	Version         string   // kvnode version of that node
	// Formats is the newest version of the replicated formats (Raft
	// commands and state machine snapshots) that node's build reads; 0
	// from a build older than the field. A format is written only once
	// every member reads it, so a rolling upgrade never hands an old
	// member an entry it cannot apply.
	Formats int
}

// MinFormats is the newest replicated format every member reads (see
// Meta.Formats): the least of the members' Formats, a member of a release
// older than the field counting as 2; members that left do not count.
// With no member known, it is 0.
func MinFormats(members []Member) int {
	least := 0
	for _, m := range members {
		if m.Status == StatusLeft {
			continue
		}
		f := max(m.Formats, 2)
		if least == 0 || f < least {
			least = f
		}
	}
	return least
}

// Member is one node as this node's gossip sees it.
type Member struct {
	Name       string
	GossipAddr string // host:port
	Meta
	Status Status
	// Since is when this node saw the member enter Status, by the local
	// clock; clocks of different nodes are never compared. A member first
	// seen as failed and later learned to have left keeps the Since of when
	// it stopped being alive.
	Since time.Time
}
