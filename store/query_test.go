package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/catalog"
)

// runQuery compiles and runs text on node n, linearizably, and returns the
// JSON result.
func runQuery(t *testing.T, n *testNode, text string, params ...any) (string, error) {
	t.Helper()
	q, err := n.CompileQuery(text)
	if err != nil {
		return "", err
	}
	res, err := n.Query(ctxT(t, 20*time.Second), region.Linearizable, q, params, oql.Options{MaxRows: 100000})
	if err != nil {
		return "", err
	}
	b, err := res.MarshalJSON()
	return string(b), err
}

// TestQueriesAcrossNodes: four nodes, a partitioned region on four groups
// with two replicas each (so every node must fetch some groups' partials
// from other members) joined with a replicated region; every node answers
// every query the same, a named query created on one node runs on all,
// and a write acknowledged on one node is seen by a query on another.
func TestQueriesAcrossNodes(t *testing.T) {
	tc := partitionCluster(t, 4, 4, 2, nil)
	leader := tc.leader()
	mustCreate(t, leader, "cust", region.Replicate)
	const orders = 200
	var entries []region.Entry
	for i := range orders {
		entries = append(entries, region.Entry{Key: fmt.Sprintf("o%03d", i),
			Value: val(fmt.Sprintf(`{"id":%d,"cust":%d,"total":%d.5}`, i, i%10, i))})
	}
	if err := leader.Put(ctxT(t, 20*time.Second), "p", entries, region.TTL{}); err != nil {
		t.Fatal(err)
	}
	for c := range 10 {
		mustPut(t, leader, "cust", fmt.Sprintf("c%d", c), fmt.Sprintf(`{"cust":%d,"name":"n%d","vip":%v}`, c, c, c < 3))
	}

	// Expected answers, computed here.
	var top5 []string
	for i := orders - 1; i >= orders-5; i-- {
		top5 = append(top5, fmt.Sprint(i))
	}
	vipOrders := 0
	for i := range orders {
		if i%10 < 3 {
			vipOrders++
		}
	}
	var groups []string
	for c := range 10 {
		sum := 0.0
		for i := c; i < orders; i += 10 {
			sum += float64(i) + 0.5
		}
		groups = append(groups, fmt.Sprintf(`{"c":%d,"n":%d,"s":%v}`, c, orders/10, sum))
	}
	cases := []struct{ q, want string }{
		{"SELECT COUNT(*) FROM /p", fmt.Sprintf("[%d]", orders)},
		{"SELECT COUNT(*) FROM /p o WHERE o.total > 100", fmt.Sprintf("[%d]", orders-100)},
		{"SELECT o.id FROM /p o ORDER BY o.id DESC LIMIT 5", "[" + strings.Join(top5, ",") + "]"},
		{"SELECT DISTINCT o.cust FROM /p o ORDER BY o.cust", "[0,1,2,3,4,5,6,7,8,9]"},
		{"SELECT o.cust AS c, COUNT(*) AS n, SUM(o.total) AS s FROM /p o GROUP BY o.cust ORDER BY c", "[" + strings.Join(groups, ",") + "]"},
		{"SELECT MAX(o.id), MIN(o.total) FROM /p o", fmt.Sprintf(`[{"id":%d,"total":0.5}]`, orders-1)},
		{"SELECT AVG(o.id) FROM /p o", "[99.5]"},
		{"SELECT COUNT(*) FROM /p o, /cust c WHERE o.cust = c.cust AND c.vip = true", fmt.Sprintf("[%d]", vipOrders)},
		{"SELECT o.id FROM /p o WHERE o.cust IN (SELECT c.cust FROM /cust c WHERE c.name = 'n7') ORDER BY o.id LIMIT 3", "[7,17,27]"},
		{"SELECT c.name FROM /cust c WHERE c.cust IN (SELECT o.cust FROM /p o WHERE o.id = 42)", `["n2"]`},
	}
	for _, n := range tc.running() {
		for _, tt := range cases {
			got, err := runQuery(t, n, tt.q)
			if err != nil || got != tt.want {
				t.Errorf("%s: %s = %s, %v; want %s", n.name, tt.q, got, err, tt.want)
			}
		}
	}

	// Partitioned-region rules.
	for _, q := range []string{
		"SELECT o.id FROM /p o ORDER BY o.total",             // ORDER BY not derivable from the projection
		"SELECT COUNT(*) FROM /p a, /p2 b WHERE a.id = b.id", // two partitioned regions (p2 below)
	} {
		mustCreate(t, leader, "p2", region.Partition)
		if _, err := runQuery(t, leader, q); err == nil {
			t.Errorf("%s succeeded, want an error", q)
		}
		_ = leader.DestroyRegion(ctxT(t, 10*time.Second), "p2")
	}

	// A named query created on one node runs on every other.
	nodes := tc.running()
	if err := catalog.New(nodes[0].Router()).CreateQuery(ctxT(t, 10*time.Second), "byCust", "SELECT o.id FROM /p o WHERE o.cust = $1 AND o.id < $2 ORDER BY o.id"); err != nil {
		t.Fatal(err)
	}
	err := catalog.New(nodes[1].Router()).CreateQuery(ctxT(t, 10*time.Second), "byCust", "SELECT 1 FROM /p")
	var ce *region.ConflictError
	if !errors.As(err, &ce) || string(ce.Current) != `{"id":"byCust","oql":"SELECT o.id FROM /p o WHERE o.cust = $1 AND o.id < $2 ORDER BY o.id"}` {
		t.Fatalf("duplicate create on another node = %v, want a conflict carrying the stored query", err)
	}
	for _, n := range nodes[1:] {
		nq, err := catalog.New(n.Router()).NamedQuery(ctxT(t, 10*time.Second), region.Linearizable, "byCust")
		if err != nil {
			t.Fatalf("%s: named query: %v", n.name, err)
		}
		if got, err := runQuery(t, n, nq.OQL, int64(3), int64(40)); err != nil || got != "[3,13,23,33]" {
			t.Errorf("%s: byCust(3, 40) = %s, %v; want [3,13,23,33]", n.name, got, err)
		}
	}
	if err := catalog.New(nodes[2].Router()).UpdateQuery(ctxT(t, 10*time.Second), "byCust", "SELECT COUNT(*) FROM /p o WHERE o.cust = $1 AND o.id < $2"); err != nil {
		t.Fatal(err)
	}
	nq, err := catalog.New(nodes[3].Router()).NamedQuery(ctxT(t, 10*time.Second), region.Linearizable, "byCust")
	if err != nil || !strings.HasPrefix(nq.OQL, "SELECT COUNT(*)") {
		t.Fatalf("after update on %s, %s sees %q, %v", nodes[2].name, nodes[3].name, nq.OQL, err)
	}
	if err := catalog.New(nodes[3].Router()).DeleteQuery(ctxT(t, 10*time.Second), "byCust"); err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.New(nodes[0].Router()).NamedQuery(ctxT(t, 10*time.Second), region.Linearizable, "byCust"); !errors.Is(err, region.ErrKeyNotFound) {
		t.Fatalf("after delete: %v, want ErrKeyNotFound", err)
	}
	list, err := catalog.New(nodes[1].Router()).Queries(ctxT(t, 10*time.Second), region.Linearizable)
	if err != nil || len(list) != 0 {
		t.Fatalf("Queries after delete = %v, %v; want none", list, err)
	}

	// Read-your-writes across nodes: a write acknowledged on one node is in
	// the next query on another.
	for i := range 10 {
		w, r := nodes[i%4], nodes[(i+1)%4]
		key := fmt.Sprintf("new%d", i)
		mustPut(t, w, "p", key, fmt.Sprintf(`{"id":%d,"cust":99}`, 1000+i))
		got, err := runQuery(t, r, "SELECT COUNT(*) FROM /p o WHERE o.cust = 99")
		if want := fmt.Sprintf("[%d]", i+1); err != nil || got != want {
			t.Fatalf("query on %s after a write on %s = %s, %v; want %s", r.name, w.name, got, err, want)
		}
	}
}

// TestQueryAfterLosingAMember: with one of three members killed, queries
// over a partitioned region still answer every row.
func TestQueryAfterLosingAMember(t *testing.T) {
	tc := partitionCluster(t, 3, 4, 3, nil)
	putKeys(t, tc, "p", 300)
	victim := tc.running()[2]
	tc.crash(victim.name)
	for _, n := range tc.running() {
		var got string
		var err error
		waitfor.Cond(t, 20*time.Second, "the query to answer after the crash", func() bool {
			got, err = runQuery(t, n, "SELECT COUNT(*) FROM /p o WHERE o.i >= 0")
			return err == nil
		})
		if got != "[300]" {
			t.Fatalf("%s: count after the crash = %s, want [300]", n.name, got)
		}
		got, err = runQuery(t, n, "SELECT o.i FROM /p o WHERE o.i < 3 ORDER BY o.i")
		var rows []int
		if err == nil {
			err = json.Unmarshal([]byte(got), &rows)
		}
		if err != nil || !slices.Equal(rows, []int{0, 1, 2}) {
			t.Fatalf("%s: first rows = %s, %v", n.name, got, err)
		}
	}
}
