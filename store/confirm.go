package store

import (
	"context"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/raftgroup"
	"github.com/kvnode/kvnode/store/transport"
)

// confirmLeadership is the read-index round's leadership check (see
// ReadIndexer): it asks every other voter of g for its term, concurrently,
// and returns nil once a quorum (this leader included) answered with at
// most term. A voter in a later term means a newer leader may exist:
// ErrNotLeader, which readers retry elsewhere. Voters that do not answer
// within twice the election timeout count against the quorum (a leader
// cut off from the others stops serving reads; by then the others are
// electing a new leader anyway).
//
// Each voter is asked by name at the address gossip gives for it, and the
// receiver refuses a request meant for another member, so one member can
// never be counted twice after addresses were shuffled by a restart.
func (r *Router) confirmLeadership(g *raftgroup.Group, term uint64) error {
	cfg, err := g.Configuration()
	if err != nil {
		return err
	}
	var others []raft.Server
	voters, self := 0, false
	for _, srv := range cfg.Servers {
		if srv.Suffrage != raft.Voter {
			continue
		}
		voters++
		if string(srv.ID) == r.name {
			self = true
		} else {
			others = append(others, srv)
		}
	}
	if !self {
		return fmt.Errorf("%w: %s is not a voter of group %d", region.ErrNotLeader, r.name, g.ID())
	}
	quorum := voters/2 + 1
	confirmed := 1
	if confirmed >= quorum {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*r.cfg.Raft.WithDefaults().ElectionTimeout)
	defer cancel()
	type answer struct {
		id   raft.ServerID
		term uint64
		err  error
	}
	answers := make(chan answer, len(others))
	addrs := memberAddrs(r.cfg.Members)
	for _, srv := range others {
		go func() {
			a, _ := addrs.ServerAddr(srv.ID)
			addr, _ := transport.SplitRaftAddr(a)
			if addr == "" {
				answers <- answer{id: srv.ID, err: fmt.Errorf("%s: %w", srv.ID, transport.ErrUnreachable)}
				return
			}
			t, err := r.client.term(ctx, addr, g.ID(), string(srv.ID))
			answers <- answer{id: srv.ID, term: t, err: err}
		}()
	}
	var failed []string
	for range others {
		a := <-answers
		switch {
		case a.err != nil:
			failed = append(failed, a.err.Error())
		case a.term > term:
			return fmt.Errorf("%w: voter %s of group %d is in term %d, after this leader's %d", region.ErrNotLeader, a.id, g.ID(), a.term, term)
		default:
			confirmed++
			if confirmed >= quorum {
				return nil
			}
		}
	}
	return fmt.Errorf("%w: %d of %d voters of group %d confirmed term %d (%v)", region.ErrNotLeader, confirmed, voters, g.ID(), term, failed)
}
