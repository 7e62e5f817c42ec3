package store

import (
	"context"
	"sync"
	"time"

	"github.com/kvnode/kvnode/store/reconcile"
)

// HandOver gives the leadership of every group this member leads (the
// control group and partition groups alike) to another voter before the
// member stops, each to the live member that has applied the most of it,
// so that no group waits for an election timeout (reconcile's HandOver).
//
// From the first call the member reports itself stopping (NodeStatus,
// Ready): the leaders of its groups then neither promote it nor hand it
// their leadership, and /readyz answers 503. The member stays a member:
// a restart is not a leave (Leave is). HandOver may be called again, for
// a group whose leadership came back meanwhile.
func (s *Store) HandOver(ctx context.Context) error {
	s.stopping.Store(true)
	return s.reconciler.HandOver(ctx, s.peerProgress(ctx))
}

// peerProgress asks every other live member, in parallel, how far it has
// applied each of its groups. Members that do not answer, answer under
// another name (a restarted container on a shuffled address) or are
// stopping themselves are left out: they are no place for leadership.
func (s *Store) peerProgress(ctx context.Context) reconcile.Applied {
	out := reconcile.Applied{}
	var mu sync.Mutex
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for name, addr := range s.router.view.internalAddrs() {
		if name == s.name {
			continue
		}
		wg.Go(func() {
			ns, err := s.client.status(ctx, addr)
			if err != nil || ns.Name != name || ns.Stopping {
				return
			}
			applied := map[uint64]uint64{}
			for _, gs := range ns.Groups {
				applied[gs.ID] = gs.AppliedIndex
			}
			mu.Lock()
			out[name] = applied
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// quietFor is how long no member may have sent this one a write before
// Quiesce returns.
const quietFor = 200 * time.Millisecond

// Quiesce waits, bounded by ctx, until no member has sent this one a write
// for quietFor: the last step of a graceful stop, once the member leads
// nothing (HandOver). A member that sends a write on a kept-alive
// connection just as the internal port closes it sees the connection cut
// and cannot tell the write was never read: its client gets an unknown
// outcome (503). After the handover no member has a reason to send one;
// those sent meanwhile (by a member that had not heard of the new leader
// yet) are answered "not the leader" and go to the leader.
func (s *Store) Quiesce(ctx context.Context) {
	t := time.NewTicker(quietFor / 10)
	defer t.Stop()
	for time.Since(time.Unix(0, s.rpc.lastWrite.Load())) < quietFor {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
