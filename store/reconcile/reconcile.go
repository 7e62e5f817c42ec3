package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/store/placement"
	"github.com/kvnode/kvnode/store/raftgroup"
)

// Host is the store as the loops see it: this member's groups, the
// partition table, and what other members say of themselves.
type Host interface {
	// Control is this member's replica of the control group, nil once the
	// store is closed.
	Control() *raftgroup.Group
	// Group is this member's replica of group gid, nil when it hosts none.
	Group(gid uint64) *raftgroup.Group
	// Groups are the groups hosted here, by ID.
	Groups() []*raftgroup.Group
	// OpenPartition opens (creating if needed) partition group gid of a
	// cluster of p partition groups.
	OpenPartition(gid uint64, p int) (*raftgroup.Group, error)
	// DropPartition closes g, which this member no longer hosts, and
	// deletes its data.
	DropPartition(g *raftgroup.Group)
	// Table is the partition table as this member's copy of the control
	// group has it, with its version; ok is false before it is created.
	// The caller must not modify it (Clone it first).
	Table() (t partition.Table, version uint64, ok bool)
	// CASTable replaces the table if it is still at version expect (0: it
	// must not exist yet); region.ErrVersionConflict when it is not.
	CASTable(ctx context.Context, expect uint64, t partition.Table) (uint64, error)
	// Status asks the member at addr for its name and its groups' status.
	Status(ctx context.Context, addr string) (name string, groups []raftgroup.Status, err error)
	// CaughtUp reports whether member srv's replica of g has caught up
	// with this member, g's leader.
	CaughtUp(g *raftgroup.Group, srv raft.Server) bool
	// RemoveFromControl has the control group's leader remove member id
	// from the control group, retrying while it has no leader.
	RemoveFromControl(ctx context.Context, id, reason string) error
	// PartitionsSynced runs after every round of the partition loop (the
	// store installs index definitions into the groups it just opened).
	PartitionsSynced()
}

// Gossip is the membership view the loops follow (package cluster's).
type Gossip interface {
	Members() []cluster.Member
	Subscribe() (<-chan struct{}, func())
}

// Admission says which members proved their identity over the internal
// port, where (package admission's Checker): gossip alone puts no member
// into a Raft configuration.
type Admission interface {
	Verified(name, addr string) bool
	// Refuse keeps member name at addr out for hold (label and reason say
	// why).
	Refuse(name, addr, label, reason string, hold time.Duration)
}

// Config configures the loops; the store fills it from its own.
type Config struct {
	// Self is this member's name, Advertise its internal address.
	Self      string
	Advertise string
	Members   Gossip
	// Admission decides who may enter a configuration; nil admits every
	// member gossip shows.
	Admission Admission
	// BootstrapExpect, JoinRequested and JoinGrace decide when and whether
	// this member bootstraps a new cluster (Consul's bootstrap-expect).
	BootstrapExpect int
	JoinRequested   bool
	JoinGrace       time.Duration
	// Started is when the member started (JoinGrace counts from it).
	Started           time.Time
	DeadMemberTimeout time.Duration
	ReconcileInterval time.Duration
	PromoteAfter      time.Duration
	// CatchUpTimeout is how long a member added to the control group as a
	// non-voter may take to catch up before it is removed again, and kept
	// out as long again (0: for ever).
	CatchUpTimeout time.Duration
	// PartitionGroups and ReplicationFactor shape the partition table when
	// this member's control group creates it.
	PartitionGroups   int
	ReplicationFactor int
	Logger            *slog.Logger
}

// Reconciler runs the loops of one member.
type Reconciler struct {
	cfg    Config
	host   Host
	logger *slog.Logger
	stop   <-chan struct{}
}

// New returns the loops of a member; they run until stop is closed.
func New(cfg Config, host Host, stop <-chan struct{}) *Reconciler {
	return &Reconciler{cfg: cfg, host: host, logger: cfg.Logger, stop: stop}
}

// await waits for a Raft future, at most raftgroup.InternalTimeout and
// never past stop.
func (r *Reconciler) await(f raft.Future) error {
	return raftgroup.Await(f, raftgroup.InternalTimeout, r.stop)
}

// trustedMembers returns the alive members that advertise an internal
// address and proved their identity there, sorted by name.
func (r *Reconciler) trustedMembers() []cluster.Member {
	var out []cluster.Member
	for _, m := range r.cfg.Members.Members() {
		if m.Status == cluster.StatusAlive && m.InternalAddr != "" && r.verified(m.Name, m.InternalAddr) {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// verified says member name proved its identity at addr (every member
// does without an Admission).
func (r *Reconciler) verified(name, addr string) bool {
	return r.cfg.Admission == nil || r.cfg.Admission.Verified(name, addr)
}

// trustedAddr says where gossip has member id, if it is alive and proved
// its identity there.
func (r *Reconciler) trustedAddr(id string) (string, bool) {
	for _, m := range r.cfg.Members.Members() {
		if m.Name == id {
			ok := m.InternalAddr != "" && m.Status == cluster.StatusAlive && r.verified(m.Name, m.InternalAddr)
			return m.InternalAddr, ok
		}
	}
	return "", false
}

// applyAddressFix records fix in g's configuration, keeping the server's
// suffrage.
func (r *Reconciler) applyAddressFix(g *raftgroup.Group, fix placement.AddressFix) error {
	r.logger.Info("updating a member's recorded Raft address", "group", g.ID(), "member", string(fix.Server.ID),
		"from", string(fix.Server.Address), "to", string(fix.To), "reason", fix.Why)
	const timeout = raftgroup.InternalTimeout
	var f raft.IndexFuture
	if fix.Server.Suffrage == raft.Voter {
		f = g.Raft().AddVoter(fix.Server.ID, fix.To, 0, timeout)
	} else {
		f = g.Raft().AddNonvoter(fix.Server.ID, fix.To, 0, timeout)
	}
	if err := r.await(f); err != nil {
		return fmt.Errorf("group %d: update the address of %s: %w", g.ID(), fix.Server.ID, err)
	}
	return nil
}

// addressFix is the next recorded address of g to mend, if any (see
// placement.NextAddressFix); joining are members about to be added.
func (r *Reconciler) addressFix(conf raft.Configuration, joining []string) (placement.AddressFix, bool) {
	return placement.NextAddressFix(conf, r.trustedAddr, joining)
}
