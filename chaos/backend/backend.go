package backend

import (
	"context"
	"errors"
)

// ErrUnsupported is returned by a Cluster whose backend cannot inject a
// fault (the compose backend cannot cut a single direction of a link).
var ErrUnsupported = errors.New("fault not supported by this backend")

// Cluster is a running three-member (or larger) cluster the nemeses act
// on, whatever runs it. Members are numbered 0..Size()-1.
type Cluster interface {
	// Size is the number of members.
	Size() int
	// Name is member i's node name; URL its REST base URL.
	Name(i int) string
	URL(i int) string
	// Kill stops member i at once (SIGKILL, docker kill): no leave, no
	// flush beyond what was already fsynced.
	Kill(i int) error
	// Stop stops member i gracefully (SIGTERM): it hands its leaderships
	// over and stays a member (a restart).
	Stop(i int) error
	// Start starts a killed or stopped member again on its data.
	Start(i int) error
	// Pause freezes member i (SIGSTOP, docker pause); Resume thaws it.
	Pause(i int) error
	Resume(i int) error
	// Isolate cuts member i off from the other members, both directions;
	// clients still reach it.
	Isolate(i int) error
	// CutOneWay drops what member from sends to member to, not the reverse.
	CutOneWay(from, to int) error
	// Slow delays what member from sends to member to.
	Slow(from, to int, ms int) error
	// LinkFaults reports whether CutOneWay and Slow work.
	LinkFaults() bool
	// PowerCut cuts the power of the given members at once: SIGKILL, and
	// every write their file systems had not made durable (fsync) is lost.
	// It returns what was lost, member by member, for the run's log;
	// ErrUnsupported when the backend cannot (PowerFaults).
	PowerCut(members ...int) (lost []string, err error)
	// PowerFaults reports whether PowerCut works.
	PowerFaults() bool
	// Heal ends every network fault.
	Heal() error
	// WaitReady waits until member i answers /readyz with 200.
	WaitReady(ctx context.Context, i int) error
	// Close stops every member and removes what the backend made.
	Close() error
}

// RegionSpec is a region the cluster serves and a run loads: the compose
// backend creates it (ComposeConfig.Regions); kvnode processes are told
// theirs by flags (ProcConfig.Flags).
type RegionSpec struct {
	Name        string
	Partitioned bool
}
