package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/kvnode/kvnode/chaos/backend"
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
	hc := &http.Client{Timeout: 2 * time.Second}
	var last error = fmt.Errorf("no member is up")
	for i := range b.Size() {
		if down != nil && down(i) {
			continue
		}
		l, err := fetchLeaders(ctx, hc, b.URL(i))
		if err == nil {
			return l, nil
		}
		last = fmt.Errorf("%s: %w", b.Name(i), err)
	}
	return Leaders{}, last
}

func fetchLeaders(ctx context.Context, hc *http.Client, base string) (Leaders, error) {
	var cv struct {
		Leader string `json:"leader"`
		Term   uint64 `json:"term"`
	}
	if err := getJSON(ctx, hc, base+"/management/v1/cluster", &cv); err != nil {
		return Leaders{}, err
	}
	var pv partitionsView
	if err := getJSON(ctx, hc, base+"/management/v1/partitions", &pv); err != nil {
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

// partitionsView is what the suite reads of GET
// /management/v1/partitions.
type partitionsView struct {
	PartitionGroups int `json:"partitionGroups"`
	Groups          []struct {
		Group   uint64 `json:"group"`
		Buckets []int  `json:"buckets"`
		Leader  string `json:"leader"`
		Term    uint64 `json:"term"`
	} `json:"groups"`
}

func getJSON(ctx context.Context, hc *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
