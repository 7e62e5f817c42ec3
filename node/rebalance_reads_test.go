package node_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/promtest"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
	"github.com/kvnode/kvnode/region"
)

// Reads of whole regions while buckets move under them (issue 29): the
// listings (GET /kv/v1/{region}/keys and ?limit=ALL, streamed; a client's
// pages of keys), queries and expiry, on an in-process cluster whose
// partition groups grow while they run.

// startGrowing starts a 3-member cluster with 4 partition groups (the
// default) and returns it with its members in name order.
func startGrowing(t *testing.T) (*nodetest.Cluster, []*node.Node) {
	t.Helper()
	c := nodetest.New(t)
	for _, name := range []string{"a", "b", "c"} {
		c.Start(name, 3)
	}
	c.Leader()
	a := c.Nodes["a"]
	// Placement hands each group's leadership to its preferred member
	// after the start: a write meanwhile can be a 503 (outcome unknown).
	waitfor.Cond(t, 60*time.Second, "every partition group led by its preferred member, with three voters", func() bool {
		var doc struct {
			Groups []struct {
				Members []string `json:"members"`
				Leader  string   `json:"leader"`
				Voters  []string `json:"voters"`
			} `json:"groups"`
		}
		r := nodetest.Call(t, a, "GET", "/management/v1/partitions", "")
		if r.Status != 200 {
			return false // 503 until the partition table is created
		}
		if err := json.Unmarshal([]byte(r.Body), &doc); err != nil || len(doc.Groups) == 0 {
			return false
		}
		for _, g := range doc.Groups {
			if len(g.Members) == 0 || g.Leader != g.Members[0] || len(g.Voters) != 3 {
				return false
			}
		}
		return true
	})
	return c, []*node.Node{a, c.Nodes["b"], c.Nodes["c"]}
}

// growGroups asks n for groups partition groups (PATCH
// /management/v1/partitions, 202) and returns the operation's URL.
func growGroups(t *testing.T, n *node.Node, groups int) string {
	t.Helper()
	r := nodetest.MustCall(t, n, "PATCH", "/management/v1/partitions", fmt.Sprintf(`{"groups":%d}`, groups), 202)
	var started struct {
		Links struct {
			Self string `json:"self"`
		} `json:"links"`
	}
	if err := json.Unmarshal([]byte(r.Body), &started); err != nil || started.Links.Self == "" {
		t.Fatalf("PATCH /management/v1/partitions: %s (%v)", r.Body, err)
	}
	return started.Links.Self
}

// growAndWait grows n's cluster to groups partition groups and waits for
// the rebalance to end in SUCCESS (ERROR fails the test); it returns the
// operation's record as the API answered it last.
func growAndWait(t *testing.T, n *node.Node, groups int) string {
	t.Helper()
	self := growGroups(t, n, groups)
	var body string
	waitfor.Cond(t, 3*time.Minute, "the rebalance to succeed", func() bool {
		body = nodetest.Call(t, n, "GET", self, "").Body
		if strings.Contains(body, `"operationStatus":"ERROR"`) {
			t.Fatalf("the rebalance failed: %s", body)
		}
		return strings.Contains(body, `"operationStatus":"SUCCESS"`)
	})
	return body
}

// rebalanceOp is what the tests read of an operation's record.
type rebalanceOp struct {
	Status string `json:"operationStatus"`
	Result struct {
		Message      string `json:"statusMessage"`
		BucketsMoved int    `json:"bucketTransfersCompleted"`
	} `json:"result"`
}

// operation reads the operation at self; ERROR fails the test.
func operation(t *testing.T, n *node.Node, self string) rebalanceOp {
	t.Helper()
	r := nodetest.MustCall(t, n, "GET", self, "", 200)
	var op rebalanceOp
	if err := json.Unmarshal([]byte(r.Body), &op); err != nil {
		t.Fatalf("GET %s: %s (%v)", self, r.Body, err)
	}
	if op.Status == "ERROR" {
		t.Fatalf("the rebalance failed: %s", r.Body)
	}
	return op
}

// movedBuckets are the buckets whose owner differs between before and
// after (owners' answers).
func movedBuckets(before, after map[uint64][]int) map[int]bool {
	owner := map[int]uint64{}
	for g, bs := range before {
		for _, b := range bs {
			owner[b] = g
		}
	}
	moved := map[int]bool{}
	for g, bs := range after {
		for _, b := range bs {
			if owner[b] != g {
				moved[b] = true
			}
		}
	}
	return moved
}

// putMany writes keys (with bodies from value) in requests of 100 keys, the
// multi-key PUT; suffix is appended to each path (e.g. "?ttl=30").
func putMany(t *testing.T, n *node.Node, regionName string, keys []string, value func(string) string, suffix string) {
	t.Helper()
	for chunk := range slices.Chunk(keys, 100) {
		vals := make([]string, len(chunk))
		for i, k := range chunk {
			vals[i] = value(k)
		}
		path, body := "/kv/v1/"+regionName+"/"+strings.Join(chunk, ",")+suffix, "["+strings.Join(vals, ",")+"]"
		// The same values again after an unknown outcome (a leader
		// lost while committing): the write is idempotent.
		for try := 0; ; try++ {
			r := nodetest.Call(t, n, "PUT", path, body)
			if r.Status == 200 {
				break
			}
			if r.Status != 503 || try == 5 {
				t.Fatalf("PUT %d keys from %s on %s = %d %s", len(chunk), chunk[0], n.Name(), r.Status, r.Body)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// listedKeys is GET /kv/v1/{region}/keys, whole; a listing that fails
// part way (the connection is cut) is an error.
func listedKeys(t *testing.T, n *node.Node, regionName string) ([]string, error) {
	t.Helper()
	resp, err := http.Get("http://" + n.HTTPAddr() + "/kv/v1/" + regionName + "/keys")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("the listing broke after %d bytes: %w", len(body), err)
	}
	var doc struct {
		Keys []string `json:"keys"`
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET /kv/v1/%s/keys = %d %.300s", regionName, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("the listing (%d bytes) does not parse: %w", len(body), err)
	}
	return doc.Keys, nil
}

// checkKeys fails the test unless the keys listed on n are want.
func checkKeys(t *testing.T, n *node.Node, regionName string, want []string, when string) bool {
	t.Helper()
	got, err := listedKeys(t, n, regionName)
	if err == nil {
		if d := diffKeys(got, want); d != "" {
			err = fmt.Errorf("%s", d)
		}
	}
	if err != nil {
		t.Errorf("GET /kv/v1/%s/keys on %s, %s: %v", regionName, n.Name(), when, err)
		return false
	}
	return true
}

// listedValues is GET /kv/v1/{region}?limit=ALL read slowly: pause after
// each 16 KiB, so that the listing stays open while buckets move. It
// returns the "k" member of each value in the order listed.
func listedValues(t *testing.T, n *node.Node, regionName string, pause time.Duration) ([]string, error) {
	t.Helper()
	resp, err := http.Get("http://" + n.HTTPAddr() + "/kv/v1/" + regionName + "?limit=ALL")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body []byte
	buf := make([]byte, 16<<10)
	for {
		m, err := io.ReadFull(resp.Body, buf)
		body = append(body, buf[:m]...)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("the listing broke after %d bytes: %w", len(body), err)
		}
		time.Sleep(pause)
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET /kv/v1/%s?limit=ALL = %d %.300s", regionName, resp.StatusCode, body)
	}
	var doc map[string][]struct {
		K string `json:"k"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("the listing (%d bytes) does not parse: %w", len(body), err)
	}
	keys := make([]string, 0, len(doc[regionName]))
	for _, v := range doc[regionName] {
		keys = append(keys, v.K)
	}
	return keys, nil
}

// diffKeys says how got differs from want (sorted, distinct): keys
// missing, keys listed twice or not written, and order; "" when equal.
func diffKeys(got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	seen := map[string]int{}
	for _, k := range got {
		seen[k]++
	}
	var missing, twice, extra []string
	for _, k := range want {
		if seen[k] == 0 {
			missing = append(missing, k)
		}
	}
	for k, n := range seen {
		switch {
		case n > 1:
			twice = append(twice, k)
		case !slices.Contains(want, k):
			extra = append(extra, k)
		}
	}
	first := func(s []string) []string {
		slices.Sort(s)
		return s[:min(len(s), 8)]
	}
	return fmt.Sprintf("%d keys listed, want %d: %d missing %v, %d listed more than once %v, %d never written %v, in key order: %v",
		len(got), len(want), len(missing), first(missing), len(twice), first(twice), len(extra), first(extra), slices.IsSorted(got))
}

// adhoc runs an ad-hoc query on n and returns its JSON answer. It waits
// up to two minutes, not nodetest.Call's 15 s: a query started while
// buckets move can wait for them (the tests log how long).
func adhoc(t *testing.T, n *node.Node, oql string) string {
	t.Helper()
	client := http.Client{Timeout: 2 * time.Minute}
	resp, err := client.Get("http://" + n.HTTPAddr() + "/kv/v1/queries/adhoc?q=" + url.QueryEscape(oql))
	if err != nil {
		t.Fatalf("%s on %s: %v", oql, n.Name(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s on %s = %d %s (%v)", oql, n.Name(), resp.StatusCode, body, err)
	}
	return string(body)
}

// TestListingsAcrossMoves: a partitioned region of 3,000 entries, not
// written meanwhile, read whole again and again while the cluster grows
// from 4 to 7 partition groups and buckets move into the new ones. Every
// listing of its keys (GET .../keys), every listing of its values (GET
// ?limit=ALL, read slowly so that it stays open across moves), and the
// pages of a client that took the key list before the rebalance and reads
// 100 values at a time (multi-key GET, as the console pages) must hold
// each key exactly once; COUNT(*) and a query with a predicate must answer
// exactly, on every member.
func TestListingsAcrossMoves(t *testing.T) {
	const total = 3000
	_, members := startGrowing(t)
	a := members[0]
	nodetest.MustCall(t, a, "POST", "/management/v1/regions", `{"name":"par","type":"PARTITION"}`, 201)
	keys := make([]string, total)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%04d", i)
	}
	pad := strings.Repeat("x", 200)
	value := func(k string) string {
		var n int
		fmt.Sscanf(k, "k%d", &n)
		return fmt.Sprintf(`{"k":%q,"n":%d,"pad":%q}`, k, n, pad)
	}
	putMany(t, a, "par", keys, value, "")
	if !checkKeys(t, a, "par", keys, "before the rebalance") {
		t.FailNow()
	}
	_, before := owners(t, a)

	// The client that pages: the key list first, then a page at a time.
	pageKeys, err := listedKeys(t, members[1], "par")
	if err != nil {
		t.Fatal(err)
	}
	var paged []string
	page := 0

	self := growGroups(t, a, 7)
	start := time.Now()
	var listings, during, bad int
	// The slowest of each kind of read begun while buckets moved.
	slowest := map[string]time.Duration{}
	timed := func(kind string, moving bool, read func()) {
		began := time.Now()
		read()
		if took := time.Since(began); moving && took > slowest[kind] {
			slowest[kind] = took
		}
	}
	for op := operation(t, a, self); ; op = operation(t, a, self) {
		done := op.Status == "SUCCESS"
		n := members[listings%len(members)]
		listings++
		if !done {
			during++
		}
		for _, m := range members {
			timed("GET .../keys", !done, func() {
				if !checkKeys(t, m, "par", keys, fmt.Sprintf("%s after the rebalance began (%d buckets moved so far)", time.Since(start).Round(time.Millisecond), op.Result.BucketsMoved)) {
					bad++
				}
			})
		}
		timed("GET ?limit=ALL, read slowly", !done, func() {
			if got, err := listedValues(t, n, "par", 5*time.Millisecond); err != nil {
				bad++
				t.Errorf("GET /kv/v1/par?limit=ALL on %s, %s after the rebalance began: %v", n.Name(), time.Since(start).Round(time.Millisecond), err)
			} else if d := diffKeys(got, keys); d != "" {
				bad++
				t.Errorf("GET /kv/v1/par?limit=ALL on %s, %s after the rebalance began: %s", n.Name(), time.Since(start).Round(time.Millisecond), d)
			}
		})
		for _, q := range []struct{ oql, want string }{
			{"SELECT COUNT(*) FROM /par", fmt.Sprintf("[%d]", total)},
			{"SELECT p.k FROM /par p WHERE p.n >= 2990 ORDER BY p.k", `["k2990","k2991","k2992","k2993","k2994","k2995","k2996","k2997","k2998","k2999"]`},
			{"SELECT COUNT(*) FROM /par p WHERE p.n < 1000", "[1000]"},
		} {
			timed("query", !done, func() {
				if got := adhoc(t, n, q.oql); got != q.want {
					bad++
					t.Errorf("%s on %s, %s after the rebalance began = %s, want %s", q.oql, n.Name(), time.Since(start).Round(time.Millisecond), got, q.want)
				}
			})
		}
		// Two pages of the paging client between each round.
		for range 2 {
			if page*100 < len(pageKeys) {
				chunk := pageKeys[page*100 : min(len(pageKeys), (page+1)*100)]
				page++
				r := nodetest.MustCall(t, members[(page+1)%3], "GET", "/kv/v1/par/"+strings.Join(chunk, ","), "", 200)
				var doc map[string][]json.RawMessage
				if err := json.Unmarshal([]byte(r.Body), &doc); err != nil || len(doc["par"]) != len(chunk) {
					t.Fatalf("page %d: %d values for %d keys (%v): %.300s", page, len(doc["par"]), len(chunk), err, r.Body)
				}
				for i, v := range doc["par"] {
					if string(v) != value(chunk[i]) {
						t.Errorf("page %d: %s = %s, want %s", page, chunk[i], v, value(chunk[i]))
					}
					paged = append(paged, chunk[i])
				}
			}
		}
		if bad > 10 {
			t.Fatalf("giving up after %d wrong answers", bad)
		}
		if done {
			t.Logf("%d rounds of listings and queries, %d of them begun while the rebalance ran (%s, %d buckets moved); the slowest while it ran: %v", listings, during, time.Since(start).Round(time.Millisecond), op.Result.BucketsMoved, slowest)
			if op.Result.BucketsMoved == 0 {
				t.Fatalf("the rebalance moved no bucket: %+v", op)
			}
			break
		}
		if time.Since(start) > 3*time.Minute {
			t.Fatalf("the rebalance has not ended after %s: %+v", time.Since(start), op)
		}
	}
	if during < 2 {
		t.Errorf("only %d rounds of reads began while buckets moved: the test did not test moves", during)
	}
	// The rest of the client's pages, after the moves.
	for ; page*100 < len(pageKeys); page++ {
		chunk := pageKeys[page*100 : min(len(pageKeys), (page+1)*100)]
		r := nodetest.MustCall(t, members[page%3], "GET", "/kv/v1/par/"+strings.Join(chunk, ","), "", 200)
		var doc map[string][]json.RawMessage
		if err := json.Unmarshal([]byte(r.Body), &doc); err != nil || len(doc["par"]) != len(chunk) {
			t.Fatalf("page %d: %d values for %d keys (%v)", page+1, len(doc["par"]), len(chunk), err)
		}
		paged = append(paged, chunk...)
	}
	if d := diffKeys(paged, keys); d != "" {
		t.Errorf("the client's pages: %s", d)
	}
	groups, after := owners(t, a)
	moved := movedBuckets(before, after)
	if groups != 7 || len(moved) == 0 {
		t.Fatalf("after the rebalance: %d groups, %d buckets moved; want 7 and some", groups, len(moved))
	}
	inMoved := 0
	for _, k := range keys {
		if moved[region.Bucket(k)] {
			inMoved++
		}
	}
	t.Logf("%d buckets moved, holding %d of the %d keys", len(moved), inMoved, total)
	for _, n := range members {
		checkKeys(t, n, "par", keys, "after the rebalance")
	}
}

// waitOperation waits until the operation at self succeeds and returns
// it.
func waitOperation(t *testing.T, n *node.Node, self string) rebalanceOp {
	t.Helper()
	var op rebalanceOp
	waitfor.Cond(t, 3*time.Minute, "the rebalance to succeed", func() bool {
		op = operation(t, n, self)
		return op.Status == "SUCCESS"
	})
	return op
}

// TestExpiryAcrossMoves: entries written with a time-to-live into
// buckets that then move to new partition groups keep the deadline they
// were written with: still there after their bucket moved while it has not
// passed, gone (404, out of listings and counts, removed from every
// replica) once it has, not a time-to-live later counted from the move.
// The deadline passes while the rebalance may still be moving other
// buckets. Entries whose deadline passes while their bucket moves are not
// brought back by the copy, and entries without a time-to-live all stay.
func TestExpiryAcrossMoves(t *testing.T) {
	const (
		ttl = 30 * time.Second
		// The moves begin this long after the entries were written: a
		// deadline counted again from a move would be this much later.
		gap = 6 * time.Second
	)
	_, members := startGrowing(t)
	a := members[0]
	nodetest.MustCall(t, a, "POST", "/management/v1/regions", `{"name":"par","type":"PARTITION"}`, 201)
	named := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%04d", prefix, i)
		}
		return out
	}
	keep, long, short := named("keep", 600), named("long", 600), named("short", 300)
	value := func(k string) string { return fmt.Sprintf(`{"k":%q}`, k) }
	putMany(t, a, "par", keep, value, "")
	written := time.Now()
	putMany(t, a, "par", long, value, fmt.Sprintf("?ttl=%d", int(ttl/time.Second)))
	deadline := time.Now().Add(ttl) // no long entry's is later
	_, before := owners(t, a)

	time.Sleep(time.Until(written.Add(gap)))
	// These expire while their buckets move.
	putMany(t, a, "par", short, value, "?ttl=2")
	self := growGroups(t, a, 7)

	// Wait until the buckets that moved hold some of the entries with a
	// deadline (the rebalance goes on).
	var movedB map[int]bool
	var inMoved []string
	waitfor.Cond(t, time.Until(deadline.Add(-4*time.Second)), "buckets holding entries with a deadline to move", func() bool {
		operation(t, a, self) // an ERROR fails the test
		_, now := owners(t, a)
		movedB, inMoved = movedBuckets(before, now), nil
		for _, k := range long {
			if movedB[region.Bucket(k)] {
				inMoved = append(inMoved, k)
			}
		}
		return len(inMoved) >= 10
	})
	t.Logf("%s after the writes, %d buckets moved, holding %d of the %d entries with a deadline", time.Since(written).Round(time.Millisecond), len(movedB), len(inMoved), len(long))

	// Before the deadline: those entries are there, on every member.
	for _, n := range members {
		r := nodetest.MustCall(t, n, "GET", "/kv/v1/par/"+strings.Join(inMoved, ","), "", 200)
		var doc map[string][]json.RawMessage
		if err := json.Unmarshal([]byte(r.Body), &doc); err != nil || len(doc["par"]) != len(inMoved) {
			t.Fatalf("the moved entries with a deadline on %s: %v %.200s", n.Name(), err, r.Body)
		}
		for i, v := range doc["par"] {
			if string(v) != value(inMoved[i]) {
				t.Errorf("%s on %s after its bucket moved = %s", inMoved[i], n.Name(), v)
			}
		}
	}
	if time.Now().After(deadline.Add(-time.Second)) {
		t.Fatalf("the checks before the deadline ended %s after it", time.Since(deadline))
	}

	// After it (and a little for the reads' clock), every one is gone at
	// once: none kept a deadline counted from its move.
	time.Sleep(time.Until(deadline.Add(1500 * time.Millisecond)))
	if time.Since(written) > ttl+gap-time.Second {
		t.Fatalf("too late (%s after the writes) to tell a deadline kept from one counted from the move", time.Since(written))
	}
	_, now := owners(t, a)
	movedB = movedBuckets(before, now)
	for _, n := range members {
		r := nodetest.MustCall(t, n, "GET", "/kv/v1/par/"+strings.Join(long, ",")+"?ignoreMissingKey=true", "", 200)
		var doc map[string][]json.RawMessage
		if err := json.Unmarshal([]byte(r.Body), &doc); err != nil {
			t.Fatal(err)
		}
		var left []string
		movedLeft := 0
		for i, v := range doc["par"] {
			if string(v) != "null" {
				left = append(left, long[i])
				if movedB[region.Bucket(long[i])] {
					movedLeft++
				}
			}
		}
		if len(left) > 0 {
			t.Errorf("%s after the deadline, %s still has %d entries with a deadline (%d of them in moved buckets): %v", time.Since(deadline).Round(time.Millisecond), n.Name(), len(left), movedLeft, left[:min(len(left), 8)])
		}
		nodetest.MustCall(t, n, "GET", "/kv/v1/par/"+inMoved[0], "", 404)
	}
	t.Logf("the deadline passed with %d buckets moved so far", len(movedB))

	op := waitOperation(t, a, self)
	if op.Result.BucketsMoved == 0 {
		t.Fatalf("the rebalance moved no bucket: %+v", op)
	}
	t.Logf("the rebalance ended %s after the writes, %d buckets moved", time.Since(written).Round(time.Millisecond), op.Result.BucketsMoved)
	for _, n := range members {
		checkKeys(t, n, "par", keep, "after the rebalance")
		nodetest.MustCall(t, n, "GET", "/kv/v1/par/"+short[len(short)-1], "", 404)
		if c := nodetest.MustCall(t, n, "HEAD", "/kv/v1/par", "", 200).Header.Get("Resource-Count"); c != fmt.Sprint(len(keep)) {
			t.Errorf("count on %s after the deadline = %s, want %d", n.Name(), c, len(keep))
		}
		if got := adhoc(t, n, "SELECT COUNT(*) FROM /par"); got != fmt.Sprintf("[%d]", len(keep)) {
			t.Errorf("COUNT(*) on %s after the deadline = %s, want [%d]", n.Name(), got, len(keep))
		}
	}
	// Removed, not just hidden: every replica holds the entries without a
	// deadline and nothing else.
	for _, n := range members {
		waitfor.Cond(t, 20*time.Second, "the expired entries to be removed on "+n.Name(), func() bool {
			return promtest.Parse(t, scrape(t, n)).Sum("kvnode_region_entries", map[string]string{"region": "par"}) == float64(len(keep))
		})
	}
}
