package kvrest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/bench/kvbench"

	"github.com/kvnode/kvnode/partition"
)

// TestBucketOf: kvbench's bucket of a key is the server's (it re-states
// the hash because it may not import partition; this test may).
func TestBucketOf(t *testing.T) {
	for i := range 5000 {
		key := fmt.Sprintf("kvbench-%08d", i)
		if i%7 == 0 {
			key = fmt.Sprintf("k é/%d,x", i)
		}
		if got, want := bucketOf(key, partition.Buckets), partition.Bucket(key); got != want {
			t.Fatalf("bucketOf(%q) = %d, partition.Bucket = %d", key, got, want)
		}
	}
}

const clusterJSON = `{"leader":"n2","term":3,"members":[
 {"name":"n1","restUrl":"http://127.0.0.1:8081","status":"alive","groups":[],"suffrage":"voter"},
 {"name":"n2","restUrl":"http://127.0.0.1:8082/","status":"alive","groups":[],"suffrage":"voter"},
 {"name":"n3","restUrl":"http://127.0.0.1:8083","status":"failed","groups":[],"suffrage":"voter"}]}`

// partitionsJSON: bucket b in group 1 + b mod 3, led by n1, n2 and the
// failed n3.
func partitionsJSON() string {
	groups := make([][]int, 3)
	for b := range 113 {
		groups[b%3] = append(groups[b%3], b)
	}
	var parts []string
	for g, bs := range groups {
		bj, _ := json.Marshal(bs)
		parts = append(parts, fmt.Sprintf(`{"group":%d,"buckets":%s,"members":["n1","n2","n3"],"leader":"n%d","term":2}`, g+1, bj, g+1))
	}
	return `{"partitionGroups":3,"replicationFactor":3,"buckets":113,"groups":[` + strings.Join(parts, ",") + `]}`
}

func TestLeaderMap(t *testing.T) {
	var cl clusterDoc
	var pt partitionsDoc
	if err := json.Unmarshal([]byte(clusterJSON), &cl); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(partitionsJSON()), &pt); err != nil {
		t.Fatal(err)
	}
	cfg := kvbench.Default()

	// A replicated region: the control group's leader holds it.
	lm, err := buildLeaderMap(&cfg, cl, pt, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := lm.leaderOf("anything"); got != "http://127.0.0.1:8082" || lm.unknown() != 0 {
		t.Errorf("replicated: leader %q, want n2's URL", got)
	}

	// A partitioned region: the leader of the key's bucket's group; none
	// for a group led by a member that is not alive.
	lm, err = buildLeaderMap(&cfg, cl, pt, true)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for i := range 3000 {
		key := fmt.Sprintf("k%d", i)
		got := lm.leaderOf(key)
		want := []string{"http://127.0.0.1:8081", "http://127.0.0.1:8082", ""}[partition.Bucket(key)%3]
		if got != want {
			t.Fatalf("key %s (bucket %d): leader %q, want %q", key, partition.Bucket(key), got, want)
		}
		counts[got]++
	}
	if len(counts) != 3 {
		t.Errorf("keys reached %v", counts)
	}
	// Buckets 2, 5, ..., 110 are n3's, which is not alive.
	if n := lm.unknown(); n != 37 {
		t.Errorf("%d buckets without a known leader, want 37", n)
	}

	// A member advertising an address off this machine is refused, as an
	// endpoint would be, unless non-loopback endpoints are allowed.
	cl.Members[0].RESTURL = "http://10.1.2.3:8081"
	if _, err := buildLeaderMap(&cfg, cl, pt, true); err == nil || !strings.Contains(err.Error(), "allow-nonloopback") {
		t.Errorf("a non-loopback member URL: %v", err)
	}
	cfg.AllowNonLoopback = true
	if lm, err = buildLeaderMap(&cfg, cl, pt, false); err != nil || lm.leaderOf("k") != "http://127.0.0.1:8082" {
		t.Errorf("allowed: %v", err)
	}

	pt.Groups[0].Buckets = append(pt.Groups[0].Buckets, 113)
	if _, err := buildLeaderMap(&cfg, cl, pt, true); err == nil {
		t.Error("a bucket outside the table was accepted")
	}
}
