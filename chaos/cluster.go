package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/kvnode/kvnode/chaos/backend"
	"github.com/kvnode/kvnode/client"
)

// Leaders is who leads what, as one member's management views tell.
type Leaders struct {
	Control     string            // the control group's leader: REPLICATE regions
	ControlTerm uint64            // its term
	Partitions  map[uint64]string // partition group → leader
	Terms       map[uint64]uint64 // partition group → its leader's term
	P           int               // partition groups
}

// Led lists the groups member name leads (0 is the control group).
func (l Leaders) Led(name string) []uint64 {
	var out []uint64
	if l.Control == name {
		out = append(out, 0)
	}
	for g, m := range l.Partitions {
		if m == name {
			out = append(out, g)
		}
	}
	return out
}

// TermSum is the sum of every group's term: it grows by at least one with
// every election anywhere.
func (l Leaders) TermSum() uint64 {
	s := l.ControlTerm
	for _, t := range l.Terms {
		s += t
	}
	return s
}

// FetchLeaders asks the members in turn (skipping those down[i]) until
// one answers both management views with every group led.
func FetchLeaders(ctx context.Context, b backend.Cluster, down func(int) bool) (Leaders, error) {
	var last error = fmt.Errorf("no member is up")
	for i := range b.Size() {
		if down != nil && down(i) {
			continue
		}
		l, err := fetchLeaders(ctx, b.URL(i))
		if err == nil {
			return l, nil
		}
		last = fmt.Errorf("%s: %w", b.Name(i), err)
	}
	return Leaders{}, last
}

// fetchLeaders reads who leads what through the member at base alone.
func fetchLeaders(ctx context.Context, base string) (Leaders, error) {
	cl, err := memberClient(base)
	if err != nil {
		return Leaders{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	cv, err := cl.Cluster().Status(ctx)
	if err != nil {
		return Leaders{}, err
	}
	pv, err := cl.Cluster().Partitions(ctx)
	if err != nil {
		return Leaders{}, err
	}
	if cv.Leader == "" {
		return Leaders{}, fmt.Errorf("the control group has no leader")
	}
	l := Leaders{Control: cv.Leader, ControlTerm: cv.Term, Partitions: map[uint64]string{}, Terms: map[uint64]uint64{}, P: pv.PartitionGroups}
	for _, g := range pv.Groups {
		if g.Leader == "" {
			return Leaders{}, fmt.Errorf("partition group %d has no leader", g.Group)
		}
		l.Partitions[g.Group] = g.Leader
		l.Terms[g.Group] = g.Term
	}
	return l, nil
}

// memberClient is a client of the member at base alone that sends each
// request once, as it is (no single hop, no retry): the suite's views of
// one member, and its probes of one member's writes.
func memberClient(base string) (*client.Client, error) {
	return client.New(client.Config{Endpoints: []string{base}, DisableSingleHop: true, RetryFor: time.Nanosecond})
}
