package expiry

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
)

// Groups is what the loop needs of the store (store.Router implements it).
type Groups interface {
	// Placement is the partition table: the partition groups are 1..P.
	Placement(ctx context.Context) (partition.Table, error)
	// Leads reports whether this member leads group gid now.
	Leads(gid uint64) bool
	// ControlState is this member's replica of the control group.
	ControlState() (*fsm.FSM, error)
	// LocalPart is this member's replica of partition group gid.
	LocalPart(ctx context.Context, gid uint64, c region.Consistency) (*fsm.FSM, error)
	// Apply replicates cmd through group gid.
	Apply(ctx context.Context, gid uint64, cmd *codec.Command) (*codec.Result, error)
}

// Interval is how often the loop looks for due entries: an expired
// entry's removal (and its expire event) follows its deadline by about
// this much plus a commit. Reads hide it from the deadline on.
const Interval = 250 * time.Millisecond

// batchKeys bounds the keys of one expire command.
const batchKeys = 1000

// Run proposes the removal of due entries on the groups this member
// leads, every interval, until ctx ends.
func Run(ctx context.Context, groups Groups, interval time.Duration, logger *slog.Logger) {
	if interval <= 0 {
		interval = Interval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := Once(ctx, groups); err != nil && ctx.Err() == nil {
			logger.Warn("expiry: removing expired entries failed; trying again", "error", err)
		}
	}
}

// Once proposes the removal of the entries due now on every group this
// member leads.
func Once(ctx context.Context, groups Groups) error {
	gids := []uint64{0}
	if t, err := groups.Placement(ctx); err == nil {
		for g := 1; g <= t.P(); g++ {
			gids = append(gids, uint64(g))
		}
	}
	for _, gid := range gids {
		if !groups.Leads(gid) {
			continue
		}
		f, err := replica(ctx, groups, gid)
		if err != nil {
			continue // not open here (any more)
		}
		for _, d := range f.Due(batchKeys) {
			cmd := &codec.Command{Op: codec.OpExpire, Region: d.Region, RegionID: d.RegionID, Keys: d.Keys}
			if _, err := groups.Apply(ctx, gid, cmd); err != nil {
				return err
			}
		}
	}
	return nil
}

func replica(ctx context.Context, groups Groups, gid uint64) (*fsm.FSM, error) {
	if gid == 0 {
		return groups.ControlState()
	}
	return groups.LocalPart(ctx, gid, region.Stale)
}

// Stamp puts this member's clock into a command that carries time
// (codec.Op.Timed) and has none yet: the clock expiry is decided by
// (fsm/expiry.go). formats is the newest format level every member reads
// (cluster.MinFormats): below fsm.FormatTime, a member of an older release
// could not decode a command with time, so the command goes without it,
// and one that needs it (a time-to-live, an expiry, a region's default)
// is refused with region.ErrUpgradeInProgress before anything is written.
func Stamp(cmd *codec.Command, formats int, now time.Time) error {
	if !cmd.Op.Timed() || cmd.Now != 0 {
		return nil
	}
	if formats >= fsm.FormatTime {
		cmd.Now = uint64(now.UnixMilli())
		return nil
	}
	if cmd.TTL != 0 || cmd.Op.V3Only() {
		return fmt.Errorf("%v on region %q: %w: entry time-to-live needs every member on a release that reads format %d (one reads %d); upgrade the others first",
			cmd.Op, cmd.Region, region.ErrUpgradeInProgress, fsm.FormatTime, formats)
	}
	return nil
}

// Cached returns a function that answers f's value, computing it at most
// once per interval: what Stamp needs on every write (the format every
// member reads, from the whole gossip view) changes only when members do,
// and a write must not copy and sort the member list.
func Cached(f func() int, interval time.Duration) func() int {
	var mu sync.Mutex
	var at time.Time
	var v int
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); at.IsZero() || now.Sub(at) >= interval {
			v, at = f(), now
		}
		return v
	}
}
