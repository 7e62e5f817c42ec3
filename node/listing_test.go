package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// TestListingsOnThreeNodes lists regions through REST on every node of a
// 3-node cluster whose 4 partition groups have one replica each, so that
// every node merges its local groups with groups streamed from the others:
// the bodies are exactly those of rest-details.md, and while writes go on
// every listing is in key order, each key once, with every key whose write
// was acknowledged before the request.
func TestListingsOnThreeNodes(t *testing.T) {
	ip := nodetest.New(t)
	ip.Tune = func(_ string, cfg *node.Config) {
		cfg.PartitionGroups = 4
		cfg.ReplicationFactor = 1
	}
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}
	ip.Leader()
	nodes := []*node.Node{ip.Nodes["a"], ip.Nodes["b"], ip.Nodes["c"]}
	const n = 300
	keys := make([]string, n)
	vals := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%04d", i)
		vals[i] = fmt.Sprintf(`{"k":"%s"}`, keys[i])
	}
	for _, reg := range []string{"rep", "part"} {
		kind := map[string]string{"rep": "REPLICATE", "part": "PARTITION"}[reg]
		nodetest.MustCall(t, nodes[0], "POST", "/management/v1/regions", fmt.Sprintf(`{"name":%q,"type":%q}`, reg, kind), 201)
		for start := 0; start < n; start += 50 {
			path := "/kv/v1/" + reg + "/" + strings.Join(keys[start:start+50], ",")
			body := "[" + strings.Join(vals[start:start+50], ",") + "]"
			waitfor.Cond(t, 30*time.Second, "a multi-key PUT into "+reg, func() bool {
				return nodetest.Call(t, nodes[start/50%3], "PUT", path, body).Status == 200
			})
		}
	}

	for _, node := range nodes {
		for _, reg := range []string{"rep", "part"} {
			base := "http://" + node.HTTPAddr() + "/kv/v1/" + reg
			r := nodetest.MustCall(t, node, "GET", "/kv/v1/"+reg+"/keys", "", 200)
			if want := `{"keys":["` + strings.Join(keys, `","`) + `"]}`; r.Body != want {
				t.Errorf("%s: GET %s/keys = %.80s..., want %.80s...", node.Name(), reg, r.Body, want)
			}
			if got := r.Header.Get("Location"); got != base+"/keys" {
				t.Errorf("%s: GET %s/keys Location = %q, want %q", node.Name(), reg, got, base+"/keys")
			}
			for _, limit := range []int{n, 7} {
				q := "ALL"
				if limit < n {
					q = fmt.Sprint(limit)
				}
				r := nodetest.MustCall(t, node, "GET", "/kv/v1/"+reg+"?limit="+q, "", 200)
				if want := `{"` + reg + `":[` + strings.Join(vals[:limit], ",") + `]}`; r.Body != want {
					t.Errorf("%s: GET %s?limit=%s = %.80s..., want %.80s...", node.Name(), reg, q, r.Body, want)
				}
				if got, want := r.Header.Get("Content-Location"), base+"/"+strings.Join(keys[:limit], ","); got != want {
					t.Errorf("%s: GET %s?limit=%s Content-Location = %.80s..., want %.80s...", node.Name(), reg, q, got, want)
				}
			}
		}
	}

	for _, reg := range []string{"rep", "part"} {
		t.Run("during writes/"+reg, func(t *testing.T) {
			var mu sync.Mutex
			var acked []string
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := range 150 {
					k := fmt.Sprintf("w%04d", i)
					if tryPut(nodes[0], "/kv/v1/"+reg+"/"+k, fmt.Sprintf(`{"k":%q}`, k)) == 200 {
						mu.Lock()
						acked = append(acked, k)
						mu.Unlock()
					}
				}
			}()
			listings := 0
			for running := true; running; listings++ {
				select {
				case <-done:
					running = false
				default:
				}
				node := nodes[1+listings%2]
				mu.Lock()
				before := slices.Clone(acked)
				mu.Unlock()
				var got []string
				if listings%2 == 0 {
					var doc struct{ Keys []string }
					r := nodetest.MustCall(t, node, "GET", "/kv/v1/"+reg+"/keys", "", 200)
					if err := json.Unmarshal([]byte(r.Body), &doc); err != nil {
						t.Fatalf("%s: /keys body: %v", node.Name(), err)
					}
					got = doc.Keys
				} else {
					var doc map[string][]struct{ K string }
					r := nodetest.MustCall(t, node, "GET", "/kv/v1/"+reg+"?limit=ALL", "", 200)
					if err := json.Unmarshal([]byte(r.Body), &doc); err != nil {
						t.Fatalf("%s: ?limit=ALL body: %v", node.Name(), err)
					}
					for _, v := range doc[reg] {
						got = append(got, v.K)
					}
				}
				for i := 1; i < len(got); i++ {
					if got[i] <= got[i-1] {
						t.Fatalf("%s: listing has %q after %q, want strictly ascending keys", node.Name(), got[i], got[i-1])
					}
				}
				for _, k := range append(slices.Clone(keys), before...) {
					if _, found := slices.BinarySearch(got, k); !found {
						t.Fatalf("%s: listing of %d keys lacks %s, written (and acknowledged) before it", node.Name(), len(got), k)
					}
				}
			}
			if listings < 4 {
				t.Errorf("%d listings during the writes; want several", listings)
			}
			t.Logf("%d listings during %d acknowledged writes", listings, len(acked))
		})
	}
}

// tryPut is a PUT for a goroutine other than the test's: it reports the
// status, 0 when there was no answer, and never stops the test.
func tryPut(n *node.Node, path, body string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "PUT", "http://"+n.HTTPAddr()+path, strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
