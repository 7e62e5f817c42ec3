package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kvnode/kvnode/client"
)

// The rebalance nemesis grows the partition groups and moves buckets
// while members are killed, paused and cut off: through the management
// API (PATCH /management/v1/partitions, POST and GET
// /management/v1/operations/rebalances), as an operator would.
const (
	// maxGroups caps the growth: a 60 s run ends with at most this many
	// partition groups (each one a Raft group on every member).
	maxGroups = 12
	// settleTime is how long, once the cluster is healed, the operations
	// may take to end and the buckets to even out.
	settleTime = 60 * time.Second
	// maxRefusals caps the refusals kept in the report (all are counted).
	maxRefusals = 20
)

// RebalanceReport is what the rebalance nemesis asked for and what the
// cluster did.
type RebalanceReport struct {
	GroupsBefore int `json:"groupsBefore"`
	// GroupsAsked is the most partition groups a PATCH was answered 2xx
	// for: the table must have them at the end.
	GroupsAsked int `json:"groupsAsked"`
	GroupsAfter int `json:"groupsAfter"`
	// Patches and Posts count the requests (one tried on several members
	// counts once), the Accepted ones those answered 2xx.
	Patches         int `json:"patches"`
	PatchesAccepted int `json:"patchesAccepted"`
	Posts           int `json:"posts"`
	PostsAccepted   int `json:"postsAccepted"`
	// Refusals counts the attempts that failed (a member that could not be
	// reached, a 5xx, a 4xx); Refused keeps the first of them.
	Refusals int      `json:"refusals"`
	Refused  []string `json:"refused,omitempty"`
	// Operations are the rebalances the cluster recorded (those it started
	// on its own, --auto-rebalance, too), Succeeded those that ended in
	// SUCCESS, Errored those that ended in ERROR (id: message).
	Operations int      `json:"operations"`
	Succeeded  int      `json:"succeeded"`
	Errored    []string `json:"errored,omitempty"`
	// BucketsMoved is the operations' bucket transfers, MovedInFaults
	// those counted between a fault's start and its end; FaultsInMoves
	// are the faults injected while an operation was in progress, and
	// FaultsWithMoves those during which at least one bucket's move
	// completed.
	BucketsMoved    int `json:"bucketsMoved"`
	MovedInFaults   int `json:"movedInFaults"`
	Faults          int `json:"faults"`
	FaultsInMoves   int `json:"faultsInMoves"`
	FaultsWithMoves int `json:"faultsWithMoves"`
	// Settled is the time from the heal until no operation was in progress,
	// the table had the groups asked for and the buckets were even.
	Settled time.Duration `json:"settled"`
}

// Summary is the report in a line.
func (rb *RebalanceReport) Summary() string {
	return fmt.Sprintf("partition groups %d → %d (asked %d); PATCH %d/%d and POST %d/%d accepted, %d attempts refused; %d operations (%d SUCCESS, %d ERROR); %d buckets moved, %d during faults (%d faults, %d while an operation was in progress, %d saw moves complete); settled %v after the heal",
		rb.GroupsBefore, rb.GroupsAfter, rb.GroupsAsked, rb.PatchesAccepted, rb.Patches, rb.PostsAccepted, rb.Posts, rb.Refusals,
		rb.Operations, rb.Succeeded, len(rb.Errored), rb.BucketsMoved, rb.MovedInFaults, rb.Faults, rb.FaultsInMoves, rb.FaultsWithMoves, rb.Settled.Round(100*time.Millisecond))
}

// rebalanceFaults: every few seconds it asks for one or two more
// partition groups (PATCH, up to maxGroups; a POST of a plain rebalance
// one time in four, and always at the cap), two times in three before a
// fault, once buckets move (up to 4 s), else during the fault (kill -9 and restart, SIGSTOP/SIGCONT, or isolation) on a random
// member, held 2-5 s. At the end it heals the cluster and fails the run
// unless, within settleTime, the table has the groups last accepted, no
// operation is in progress and the buckets are even.
func rebalanceFaults(ctx context.Context, r *Run) {
	rb := &RebalanceReport{}
	r.mu.Lock()
	r.rebalance = rb
	r.mu.Unlock()
	x := &rebalancer{r: r, rb: rb}
	for i := range r.B.Size() {
		cl, err := memberClient(r.B.URL(i))
		if err != nil {
			r.fail("rebalance: a client of %s: %v", r.B.Name(i), err)
			return
		}
		defer cl.Close()
		x.members = append(x.members, cl.Cluster())
	}
	pv, err := x.partitions(ctx)
	if err != nil {
		r.fail("rebalance: the partition table before the run: %v", err)
		return
	}
	rb.GroupsBefore, rb.GroupsAsked = pv.PartitionGroups, pv.PartitionGroups
	for r.Sleep(ctx, time.Duration(1500+r.Rand().IntN(1500))*time.Millisecond) && r.Left(ctx) > hold+2*time.Second {
		i := r.Rand().IntN(r.B.Size())
		kind := r.Rand().IntN(3)
		d := time.Duration(2000+r.Rand().IntN(3000)) * time.Millisecond
		ask := x.drawAsk()
		during := r.Rand().IntN(3) == 0
		before, _ := x.bucketsMoved(ctx)
		if !during {
			// The fault comes once buckets are moving (or after 4 s).
			x.ask(ctx, ask)
			for wait := time.Now(); time.Since(wait) < 4*time.Second && r.Sleep(ctx, 200*time.Millisecond); {
				if n, _ := x.bucketsMoved(ctx); n > before {
					before = n
					break
				}
			}
		}
		_, moving := x.bucketsMoved(ctx)
		switch kind {
		case 0:
			r.Kill(ctx, i)
		case 1:
			r.Pause(ctx, i)
		case 2:
			r.Isolate(ctx, i)
		}
		// A request sent during the fault may wait on a member that is cut
		// off: the fault ends on time all the same, and the request is
		// seen through before the next one.
		asked := make(chan struct{})
		go func() {
			defer close(asked)
			if during {
				x.ask(ctx, ask)
			}
		}()
		r.Sleep(ctx, d)
		after, _ := x.bucketsMoved(ctx)
		switch kind {
		case 0:
			r.Start(i)
		case 1:
			r.Resume(i)
		case 2:
			r.Heal()
		}
		<-asked
		rb.Faults++
		if moving {
			rb.FaultsInMoves++
		}
		if before >= 0 && after > before {
			rb.MovedInFaults += after - before
			rb.FaultsWithMoves++
		}
		r.Logf("rebalance: %d buckets moved during the fault on %s (an operation in progress when it began: %v)", max(after-before, 0), r.B.Name(i), moving)
		r.WaitReady()
	}
	// The load is over: heal, then give the cluster time to finish what
	// it was asked.
	r.Restore()
	x.settle()
	r.Logf("rebalance: %s", rb.Summary())
}

// rebalancer is the rebalance nemesis's management clients (one of each
// member alone) and report.
type rebalancer struct {
	r       *Run
	rb      *RebalanceReport
	members []*client.Cluster
	mu      sync.Mutex // Refusals and Refused: requests run beside the nemesis
}

// askFor is a request the nemesis drew: a PATCH to groups (0: a POST of
// a plain rebalance), first tried on member first.
type askFor struct{ groups, first int }

// drawAsk draws the next request: one or two more partition groups, or
// (at the cap, and one time in four) a rebalance.
func (x *rebalancer) drawAsk() askFor {
	r, rb := x.r, x.rb
	a := askFor{first: r.Rand().IntN(r.B.Size())}
	if rb.GroupsAsked < maxGroups && r.Rand().IntN(4) != 0 {
		a.groups = min(maxGroups, rb.GroupsAsked+1+r.Rand().IntN(2))
	}
	return a
}

// ask sends a. It may run beside the nemesis's goroutine, so it draws no
// random numbers; the report's fields it sets are read after it ends.
func (x *rebalancer) ask(ctx context.Context, a askFor) {
	r, rb := x.r, x.rb
	var id string
	if a.groups > 0 {
		rb.Patches++
		what := fmt.Sprintf("PATCH groups %d", a.groups)
		who, err := x.mgmt(ctx, a.first, what, func(ctx context.Context, cl *client.Cluster) (err error) {
			id, err = cl.GrowPartitions(ctx, a.groups)
			return err
		})
		if err != nil {
			r.Logf("rebalance: %s failed on every member up: %v", what, err)
		} else {
			rb.PatchesAccepted++
			rb.GroupsAsked = max(rb.GroupsAsked, a.groups)
			r.Logf("rebalance: %s accepted by %s: operation %s", what, who, id)
		}
		return
	}
	rb.Posts++
	who, err := x.mgmt(ctx, a.first, "POST rebalance", func(ctx context.Context, cl *client.Cluster) (err error) {
		id, err = cl.Rebalance(ctx)
		return err
	})
	if err != nil {
		r.Logf("rebalance: POST failed on every member up: %v", err)
	} else {
		rb.PostsAccepted++
		r.Logf("rebalance: POST accepted by %s: operation %s", who, id)
	}
}

// mgmt runs call on the members that are up, each sent once to that
// member alone, from member first, moving on to the next when one cannot
// be reached or answers 5xx (a 4xx is the cluster's answer: not tried
// elsewhere); it returns the member that answered. A request that starts
// an operation (what names it; "" for a read) is seen through even when
// the run ends meanwhile, and its every failed attempt is counted in the
// run's rebalance report, the first ones kept there; a read gives up
// sooner on a member that is cut off.
func (x *rebalancer) mgmt(ctx context.Context, first int, what string, call func(context.Context, *client.Cluster) error) (string, error) {
	r := x.r
	n := r.B.Size()
	var errs []string
	for k := range n {
		i := (first + k) % n
		if r.Down(i) {
			continue
		}
		timeout := 2 * time.Second
		if what != "" {
			timeout = 8 * time.Second
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		err := call(cctx, x.members[i])
		cancel()
		if err == nil {
			return r.B.Name(i), nil
		}
		if what != "" {
			x.refused(fmt.Sprintf("%s %s: %v", what, r.B.Name(i), err))
		}
		errs = append(errs, r.B.Name(i)+": "+err.Error())
		var ae *client.Error
		if errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 || ctx.Err() != nil && what == "" {
			break
		}
	}
	if len(errs) == 0 {
		return "", fmt.Errorf("no member is up")
	}
	return "", fmt.Errorf("%s", strings.Join(errs, "; "))
}

// partitions reads the partition table through a member.
func (x *rebalancer) partitions(ctx context.Context) (pv *client.Partitions, err error) {
	_, err = x.mgmt(ctx, x.r.Rand().IntN(x.r.B.Size()), "", func(ctx context.Context, cl *client.Cluster) error {
		pv, err = cl.Partitions(ctx)
		return err
	})
	return pv, err
}

// refused notes a management request's failed attempt in the report.
func (x *rebalancer) refused(msg string) {
	x.r.Logf("rebalance: refused: %s", msg)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.rb.Refusals++
	if len(x.rb.Refused) < maxRefusals {
		x.rb.Refused = append(x.rb.Refused, fmt.Sprintf("%.1fs %s", time.Since(x.r.start).Seconds(), msg))
	}
}

// operations lists every rebalance operation the cluster recorded.
func (x *rebalancer) operations(ctx context.Context) (ops []client.Operation, err error) {
	_, err = x.mgmt(ctx, x.r.Rand().IntN(x.r.B.Size()), "", func(ctx context.Context, cl *client.Cluster) error {
		ops, err = cl.Operations(ctx)
		return err
	})
	return ops, err
}

// bucketsMoved is the sum of every operation's bucket transfers (-1 when
// no member told), and whether one is in progress.
func (x *rebalancer) bucketsMoved(ctx context.Context) (int, bool) {
	ops, err := x.operations(ctx)
	if err != nil {
		return -1, false
	}
	n, moving := 0, false
	for _, op := range ops {
		n += op.Result.BucketsMoved
		moving = moving || op.Status == client.OperationInProgress
	}
	return n, moving
}

// settle waits, up to settleTime, until the table has the groups asked
// for, every group a leader, no operation is in progress and the buckets
// are even; it fills in the report and fails the run when that never
// came.
func (x *rebalancer) settle() {
	r, rb := x.r, x.rb
	ctx, cancel := context.WithTimeout(context.Background(), settleTime)
	defer cancel()
	start := time.Now()
	var why string
	for {
		var pv *client.Partitions
		ops, err := x.operations(ctx)
		if err == nil {
			pv, err = x.partitions(ctx)
		}
		if err == nil {
			rb.GroupsAfter = pv.PartitionGroups
			rb.Operations, rb.Succeeded, rb.BucketsMoved, rb.Errored = len(ops), 0, 0, nil
			var inProgress []string
			for _, op := range ops {
				rb.BucketsMoved += op.Result.BucketsMoved
				switch op.Status {
				case client.OperationSucceeded:
					rb.Succeeded++
				case client.OperationInProgress:
					inProgress = append(inProgress, fmt.Sprintf("%s (groups %d, %d buckets moved: %s)", op.ID, op.Result.PartitionGroups, op.Result.BucketsMoved, op.Result.StatusMessage))
				default:
					rb.Errored = append(rb.Errored, op.ID+": "+op.Result.StatusMessage)
				}
			}
			why = settledWhy(pv, rb.GroupsAsked, inProgress)
			if why == "" {
				rb.Settled = time.Since(start)
				return
			}
		} else {
			why = err.Error()
		}
		select {
		case <-ctx.Done():
			r.fail("rebalance: %v after the heal: %s", settleTime, why)
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// settledWhy says why the table and the operations are not settled yet,
// "" when they are: the groups asked for, each led, none in progress,
// every group holding ⌊B/P⌋ or ⌈B/P⌉ buckets.
func settledWhy(pv *client.Partitions, asked int, inProgress []string) string {
	var why []string
	if pv.PartitionGroups < asked {
		why = append(why, fmt.Sprintf("%d partition groups, %d asked for and accepted", pv.PartitionGroups, asked))
	}
	if len(inProgress) > 0 {
		why = append(why, "in progress: "+strings.Join(inProgress, ", "))
	}
	var counts []int
	for _, g := range pv.Groups {
		counts = append(counts, len(g.Buckets))
		if g.Leader == "" {
			why = append(why, fmt.Sprintf("group %d has no leader", g.Group))
		}
	}
	if len(counts) > 0 && slices.Max(counts)-slices.Min(counts) > 1 {
		why = append(why, fmt.Sprintf("buckets per group %v", counts))
	}
	return strings.Join(why, "; ")
}
