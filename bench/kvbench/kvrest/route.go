package kvrest

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"

	"github.com/kvnode/kvnode/bench/kvbench"
)

// Leader routing (--route leader): every write goes through the leader of
// its key's Raft group, so a request sent there saves the member it would
// otherwise reach a forwarding hop. The management API says who leads:
// GET /management/v1/cluster names the control group's leader (which holds
// every replicated region) and each member's REST URL; GET
// /management/v1/partitions lists each partition group's buckets and
// leader. A key's bucket is fnv64a(key) mod the bucket count, as
// partition/hash.go has it (kvbench may not import it: it speaks REST
// only, and the API states the bucket count).

// leaderMap is what one look at the management API found.
type leaderMap struct {
	partitioned bool
	control     string   // the control group leader's URL
	bucketURL   []string // a partitioned region's bucket → its leader's URL
}

// leaderOf is key's leader URL, or "" when it is not known.
func (m *leaderMap) leaderOf(key string) string {
	if !m.partitioned {
		return m.control
	}
	if len(m.bucketURL) == 0 {
		return ""
	}
	return m.bucketURL[bucketOf(key, len(m.bucketURL))]
}

// unknown counts the groups' buckets (or the control group) whose leader
// the map does not know.
func (m *leaderMap) unknown() int {
	if !m.partitioned {
		if m.control == "" {
			return 1
		}
		return 0
	}
	n := 0
	for _, u := range m.bucketURL {
		if u == "" {
			n++
		}
	}
	return n
}

// bucketOf is fnv64a(key) mod buckets.
func bucketOf(key string, buckets int) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum64() % uint64(buckets))
}

// clusterDoc is the part of GET /management/v1/cluster kvbench reads.
type clusterDoc struct {
	Leader  string `json:"leader"`
	Members []struct {
		Name    string `json:"name"`
		RESTURL string `json:"restUrl"`
		Status  string `json:"status"`
	} `json:"members"`
}

// partitionsDoc is the part of GET /management/v1/partitions kvbench reads.
type partitionsDoc struct {
	Buckets int `json:"buckets"`
	Groups  []struct {
		Group   uint64 `json:"group"`
		Buckets []int  `json:"buckets"`
		Leader  string `json:"leader"`
	} `json:"groups"`
}

// fetchLeaders asks the cluster who leads (waiting while it answers 503,
// as it does before the partition table exists).
func (t *target) fetchLeaders(ctx context.Context) (*leaderMap, error) {
	partitioned := t.regionType == "PARTITION"
	var cl clusterDoc
	if err := t.getDoc(ctx, clusterRequest, "cluster view", &cl); err != nil {
		return nil, err
	}
	var pt partitionsDoc
	if partitioned {
		if err := t.getDoc(ctx, partitionsRequest, "partition table", &pt); err != nil {
			return nil, err
		}
	}
	return buildLeaderMap(t.cfg, cl, pt, partitioned)
}

// buildLeaderMap joins the two documents: leader names to the URLs their
// members advertise (which must pass the endpoint rules, as the endpoints
// given did).
func buildLeaderMap(cfg *kvbench.Config, cl clusterDoc, pt partitionsDoc, partitioned bool) (*leaderMap, error) {
	urls := map[string]string{}
	for _, m := range cl.Members {
		if m.RESTURL == "" || m.Status != "alive" {
			continue
		}
		u, err := cfg.CheckURL(m.RESTURL)
		if err != nil {
			return nil, err
		}
		urls[m.Name] = u
	}
	lm := &leaderMap{partitioned: partitioned, control: urls[cl.Leader]}
	if !partitioned {
		return lm, nil
	}
	if pt.Buckets < 1 || pt.Buckets > 1<<20 {
		return nil, fmt.Errorf("partition table: %d buckets", pt.Buckets)
	}
	lm.bucketURL = make([]string, pt.Buckets)
	for _, g := range pt.Groups {
		for _, b := range g.Buckets {
			if b < 0 || b >= pt.Buckets {
				return nil, fmt.Errorf("partition table: group %d has bucket %d of %d", g.Group, b, pt.Buckets)
			}
			lm.bucketURL[b] = urls[g.Leader]
		}
	}
	return lm, nil
}

// getDoc GETs a JSON document.
func (t *target) getDoc(ctx context.Context, r request, what string, doc any) error {
	a, err := t.call(ctx, r)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if a.status != 200 {
		return fmt.Errorf("%s: %w", what, unexpected(r.method+" "+r.path, a))
	}
	if err := json.Unmarshal(a.body, doc); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
