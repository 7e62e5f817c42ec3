package store

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/catalog"
	"github.com/kvnode/kvnode/store/raftgroup"
)

// tableKey is where the partition table lives among group 0's metadata.
const tableKey = catalog.TableKey

// tableView is the partition table as this node's copy of the control
// group has it, and what follows from it: where a group is hosted, and
// whether this node's replica of a group may serve. It reads, never
// writes (Router.casTable does).
type tableView struct {
	groups  *groupSet
	members Membership
	self    string
	logger  *slog.Logger
	// cache holds the decoded table (see get).
	cache atomic.Pointer[cachedTable]
	// formats is the newest replicated format every member reads (cached).
	formats func() int
}

// get returns the partition table as this node's copy of group 0 has it,
// with its version; ok is false before the leader has created it. The
// decoded table is cached per version (every partitioned operation asks for
// it): callers must not modify it; Clone it first.
func (v *tableView) get() (t partition.Table, version uint64, ok bool) {
	g := v.groups.control()
	if g == nil {
		return t, 0, false
	}
	raw, version, ok := g.FSM().Meta(tableKey)
	if !ok {
		return t, 0, false
	}
	if c := v.cache.Load(); c != nil && c.version == version {
		return c.table, version, true
	}
	t, err := partition.Decode(raw)
	if err != nil {
		// Only our own code writes it, after partition.Encode: corruption.
		v.logger.Error("partition table in group 0 does not decode", "error", err)
		return t, 0, false
	}
	v.cache.Store(&cachedTable{version: version, table: t})
	return t, version, true
}

// cachedTable is the last decoded partition table.
type cachedTable struct {
	version uint64
	table   partition.Table
}

// casTable replaces the partition table if it is still at version expect
// (0: it must not exist yet). region.ErrVersionConflict means someone else
// changed it first; the caller re-reads and decides again.
func (r *Router) casTable(ctx context.Context, expect uint64, t partition.Table) (uint64, error) {
	raw, err := partition.Encode(t)
	if err != nil {
		return 0, fmt.Errorf("encode partition table: %w", err)
	}
	res, err := r.Apply(ctx, controlGroup, &codec.Command{Op: codec.OpSetMeta, MetaKey: tableKey, MetaVersion: expect, MetaValue: raw})
	if err != nil {
		return 0, err
	}
	return res.Version, nil
}

// hostFor returns the internal address of a member that hosts group gid,
// for a node that does not: the table's members in order (the first is the
// preferred leader, so usually the actual one), rotating with attempt.
func (v *tableView) hostFor(gid uint64, attempt int) (string, error) {
	t, _, ok := v.get()
	if !ok {
		return "", fmt.Errorf("group %d: %w: no partition table yet", gid, region.ErrNoLeader)
	}
	pg, ok := t.Group(gid)
	if !ok || len(pg.Members) == 0 {
		return "", fmt.Errorf("group %d: %w: no member hosts it", gid, region.ErrNoLeader)
	}
	addrs := v.internalAddrs()
	for i := range pg.Members {
		m := pg.Members[(attempt+i)%len(pg.Members)]
		if addr, ok := addrs[m]; ok && m != v.self {
			return addr, nil
		}
	}
	return "", fmt.Errorf("group %d: %w: none of its members %v is alive", gid, region.ErrNoLeader, pg.Members)
}

// internalAddrs maps the names of alive members to their internal addresses.
func (v *tableView) internalAddrs() map[string]string {
	out := map[string]string{}
	for _, m := range v.members.Members() {
		if m.Status == cluster.StatusAlive && m.InternalAddr != "" {
			out[m.Name] = m.InternalAddr
		}
	}
	return out
}

// errNoTable marks operations on partitioned regions before the partition
// table exists (the first seconds of a new cluster).
var errNoTable = fmt.Errorf("%w: the partition table is not created yet", region.ErrNoLeader)

// localFor returns this node's replica of group gid when reads and writes
// may go through it: group 0 always; a partition group only while the table
// lists this node among its members. A replica the table moved away may
// already be out of the group's configuration and no longer replicated to,
// so it must not serve reads. A partition replica whose state machine
// halted is not usable either: the node then acts as one that does not host
// the group and sends the request to a member that does.
func (v *tableView) localFor(gid uint64) *raftgroup.Group {
	g := v.groups.get(gid)
	if g == nil || gid == controlGroup {
		return g
	}
	if g.Halted() != nil {
		return nil
	}
	t, _, ok := v.get()
	if !ok {
		return g
	}
	if pg, ok := t.Group(gid); ok && !slices.Contains(pg.Members, v.self) {
		return nil
	}
	return g
}

// Formats is the newest replicated format level every member reads
// (cluster.MinFormats): what a bucket move needs (fsm.FormatBuckets).
func (r *Router) Formats() int { return r.groups.formats() }

// Placement is the partition table as this member's copy of the control
// group has it: the groups 1..P and the owner of each bucket. Callers
// must not modify it. In the first moments of a new cluster the table may
// not exist yet: it waits for it like for a leader (LeaderWait, ctx).
func (r *Router) Placement(ctx context.Context) (partition.Table, error) {
	var since time.Time
	for attempt := 0; ; attempt++ {
		if t, _, ok := r.view.get(); ok {
			return t, nil
		}
		if since.IsZero() {
			since = time.Now()
		}
		if err := r.pause(ctx, r.groups.control(), attempt, since, errNoTable); err != nil {
			return partition.Table{}, err
		}
	}
}
