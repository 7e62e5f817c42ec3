package reconcile

import (
	"context"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/region"
)

// RemoveMember removes a member that is gone for good (a scaled-away pod,
// a machine that will not return) from the cluster now, instead of after
// the dead-member timeout: the control group's leader removes it from the
// control group, and the partition loop then re-places its replicas on the
// members that remain, as for a member that left. A member gossip still
// sees alive is refused (region.ErrMemberAlive): it would only join again;
// stop it first, or stop it with --leave-on-shutdown. This member cannot
// remove itself; a name the control group does not hold is
// region.ErrMemberNotFound.
func (r *Reconciler) RemoveMember(ctx context.Context, name string) error {
	if name == r.cfg.Self {
		return fmt.Errorf("remove member: %w: %s is the member asked; ask another member, or stop this one with --leave-on-shutdown", region.ErrInvalid, name)
	}
	for _, m := range r.cfg.Members.Members() {
		if m.Name == name && m.Status == cluster.StatusAlive {
			return fmt.Errorf("remove member %s: %w: it still answers gossip and would join again; stop it first", name, region.ErrMemberAlive)
		}
	}
	conf, err := r.controlConfiguration()
	if err != nil {
		return err
	}
	found := false
	for _, srv := range conf.Servers {
		found = found || string(srv.ID) == name
	}
	if !found {
		return fmt.Errorf("remove member %s: %w", name, region.ErrMemberNotFound)
	}
	if err := r.host.RemoveFromControl(ctx, name, "removed by an operator"); err != nil {
		return fmt.Errorf("remove member %s: %w", name, err)
	}
	r.logger.Info("member removed by an operator; its partition replicas move to the other members", "member", name)
	return nil
}

// Leave prepares this member's graceful exit: it hands the leadership of
// its groups over (HandOver), then has the control group's leader remove
// it and waits until that is committed, so the remaining members keep a
// quorum that does not count on it; then it waits while its partition
// replicas move to the remaining members (Drain). The last voter of a
// cluster stays, so that a whole-cluster shutdown restarts with its data.
func (r *Reconciler) Leave(ctx context.Context) error {
	conf, err := r.controlConfiguration()
	if err != nil {
		return err
	}
	others, member := 0, false
	for _, srv := range conf.Servers {
		if string(srv.ID) == r.cfg.Self {
			member = true
		} else if srv.Suffrage == raft.Voter {
			others++
		}
	}
	if !member || others == 0 {
		return nil
	}
	if err := r.HandOver(ctx); err != nil {
		r.logger.Warn("handing over leadership before leaving did not finish", "error", err)
	}
	if err := r.host.RemoveFromControl(ctx, r.cfg.Self, "left gracefully"); err != nil {
		return fmt.Errorf("leave: %w", err)
	}
	r.logger.Info("left the control group")
	return r.Drain(ctx)
}

// controlConfiguration is the control group's configuration as this
// member's replica has it.
func (r *Reconciler) controlConfiguration() (raft.Configuration, error) {
	g := r.host.Control()
	if g == nil {
		return raft.Configuration{}, region.ErrShuttingDown
	}
	return g.Configuration()
}
