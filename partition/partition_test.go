package partition

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestBucket(t *testing.T) {
	for _, key := range []string{"", "key-1", "1", "ключ", strings.Repeat("x", 1000)} {
		h := fnv.New64a()
		h.Write([]byte(key))
		if got, want := Bucket(key), int(h.Sum64()%Buckets); got != want {
			t.Errorf("Bucket(%q) = %d, want %d", key, got, want)
		}
	}
	// Pinned values: changing the hash moves every stored key.
	for key, want := range map[string]int{"": 103, "key-1": 105, "1": 72} {
		if got := Bucket(key); got != want {
			t.Errorf("Bucket(%q) = %d, want %d (the pinned value)", key, got, want)
		}
	}
}

func TestGroups(t *testing.T) {
	for _, p := range []int{1, 2, 4, 7, 113} {
		seen := map[int]uint64{}
		for id := uint64(1); id <= uint64(p); id++ {
			for _, b := range BucketsOf(id, p) {
				if prev, dup := seen[b]; dup {
					t.Fatalf("P=%d: bucket %d in groups %d and %d", p, b, prev, id)
				}
				seen[b] = id
				if got := GroupOf(b, p); got != id {
					t.Fatalf("P=%d: GroupOf(%d) = %d, want %d", p, b, got, id)
				}
			}
		}
		if len(seen) != Buckets {
			t.Fatalf("P=%d: %d buckets assigned, want %d", p, len(seen), Buckets)
		}
	}
	if got := GroupForKey("key-1", 4); got != GroupOf(Bucket("key-1"), 4) {
		t.Fatalf("GroupForKey = %d", got)
	}
	if got := GroupOf(5, 4); got != 2 {
		t.Fatalf("GroupOf(5, 4) = %d, want 2 (1 + 5 mod 4)", got)
	}
}

func TestNewTableAndCodec(t *testing.T) {
	for _, c := range []struct{ p, rf int }{{0, 3}, {114, 3}, {4, 0}} {
		if _, err := NewTable(c.p, c.rf); err == nil {
			t.Errorf("NewTable(%d, %d) succeeded, want an error", c.p, c.rf)
		}
	}
	tb, err := NewTable(4, 3)
	if err != nil || tb.P() != 4 || tb.RF != 3 {
		t.Fatalf("NewTable = %+v, %v", tb, err)
	}
	planned := Plan(tb, []string{"a", "b", "c"})
	b, err := Encode(planned)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil || !back.Equal(planned) {
		t.Fatalf("Decode(Encode(t)) = %+v, %v; want %+v", back, err, planned)
	}
	for _, bad := range []string{
		`not json`,
		`{"replicationFactor":3,"groups":[{"id":1,"members":[]}],"extra":1}`,
		`{"replicationFactor":0,"groups":[{"id":1,"members":[]}]}`,
		`{"replicationFactor":3,"groups":[{"id":2,"members":[]}]}`,
		`{"replicationFactor":3,"groups":[{"id":1,"members":["a","a"]}]}`,
		`{"replicationFactor":3,"groups":[{"id":1,"members":["a"],"bootstrapped":true}]}`,
		`{"replicationFactor":3,"groups":[]}`,
		`{"replicationFactor":3,"groups":[{"id":1,"members":[]}]} {}`,
	} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%s) succeeded, want an error", bad)
		}
	}
}

// bootstrapAll marks every group bootstrapped, as the nodes would.
func bootstrapAll(t Table) Table {
	for i := range t.Groups {
		if len(t.Groups[i].Members) > 0 {
			t.Groups[i].Bootstrapped = true
		}
	}
	return t
}

func counts(t Table) (replicas, leaders map[string]int) {
	replicas, leaders = map[string]int{}, map[string]int{}
	for _, g := range t.Groups {
		for _, m := range g.Members {
			replicas[m]++
		}
		if len(g.Members) > 0 {
			leaders[g.Members[0]]++
		}
	}
	return replicas, leaders
}

func spread(c map[string]int, universe []string) int {
	lo, hi := -1, 0
	for _, m := range universe {
		v := c[m]
		if lo < 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	return hi - lo
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("m%d", i)
	}
	return out
}

func TestPlanNewTables(t *testing.T) {
	for _, c := range []struct{ p, rf, n int }{{4, 3, 1}, {4, 3, 3}, {4, 3, 5}, {4, 3, 6}, {8, 3, 3}, {8, 3, 5}, {1, 3, 4}, {16, 2, 9}} {
		t.Run(fmt.Sprintf("P%d-RF%d-n%d", c.p, c.rf, c.n), func(t *testing.T) {
			tb, _ := NewTable(c.p, c.rf)
			got := Plan(tb, names(c.n))
			if err := got.Validate(); err != nil {
				t.Fatal(err)
			}
			for _, g := range got.Groups {
				if len(g.Members) != min(c.rf, c.n) || g.Bootstrapper != g.Members[0] || g.Bootstrapped {
					t.Fatalf("group %+v: want %d members, bootstrapper = first member, not bootstrapped", g, min(c.rf, c.n))
				}
			}
			r, l := counts(got)
			if s := spread(r, names(c.n)); s > 1 {
				t.Fatalf("replica counts %v spread %d", r, s)
			}
			if s := spread(l, names(c.n)); s > 1 {
				t.Fatalf("leader counts %v spread %d", l, s)
			}
		})
	}
}

func TestPlanJoinMovesLittle(t *testing.T) {
	const p, rf = 6, 3
	tb, _ := NewTable(p, rf)
	three := bootstrapAll(Plan(tb, names(3)))
	four := Plan(three, names(4))
	changes := Diff(three, four)
	adds, removes := 0, 0
	for _, ch := range changes {
		switch ch.Kind {
		case "add":
			adds++
			if ch.Member != "m3" {
				t.Errorf("change %+v: only the new member should gain replicas", ch)
			}
		case "remove":
			removes++
		}
	}
	// 18 replicas over 4 members: the newcomer takes 4 or 5; every move is
	// one add and one remove.
	if adds != removes || adds < 4 || adds > 5 {
		t.Fatalf("joining a 4th member: %d adds, %d removes (%v); want 4-5 moves", adds, removes, changes)
	}
	r, l := counts(four)
	if spread(r, names(4)) > 1 || spread(l, names(4)) > 1 {
		t.Fatalf("after join: replicas %v leaders %v", r, l)
	}
	five := Plan(bootstrapAll(four), names(5))
	r, _ = counts(five)
	for m, c := range r {
		if c > (p*rf+4)/5 {
			t.Fatalf("after the 5th joins, %s hosts %d groups, more than ceil(P·RF/members)", m, c)
		}
	}
}

func TestPlanMemberGone(t *testing.T) {
	tb, _ := NewTable(4, 3)
	four := bootstrapAll(Plan(tb, names(4)))
	three := Plan(four, []string{"m0", "m1", "m3"})
	for _, g := range three.Groups {
		if slices.Contains(g.Members, "m2") || len(g.Members) != 3 {
			t.Fatalf("group %+v: m2 must be gone and RF restored", g)
		}
		if !g.Bootstrapped {
			t.Fatalf("group %d lost its bootstrapped flag", g.ID)
		}
	}
	// Fewer members than RF: every group on every member.
	two := Plan(three, []string{"m0", "m1"})
	for _, g := range two.Groups {
		if len(g.Members) != 2 {
			t.Fatalf("group %+v: want both remaining members", g)
		}
	}
}

func TestPlanLeavesUnbootstrappedGroupsAlone(t *testing.T) {
	tb, _ := NewTable(4, 3)
	initial := Plan(tb, names(3)) // nobody bootstrapped yet
	later := Plan(initial, names(5))
	for i, g := range later.Groups {
		if !slices.Equal(g.Members, initial.Groups[i].Members) || g.Bootstrapper != initial.Groups[i].Bootstrapper {
			t.Fatalf("unbootstrapped group %d changed: %+v → %+v", g.ID, initial.Groups[i], g)
		}
	}
	// Its bootstrapper gone for good: the group is assigned afresh.
	gone := initial.Groups[0].Bootstrapper
	var rest []string
	for _, m := range names(5) {
		if m != gone {
			rest = append(rest, m)
		}
	}
	re := Plan(initial, rest)
	g := re.Groups[0]
	if slices.Contains(g.Members, gone) || g.Bootstrapper == gone || g.Bootstrapper != g.Members[0] || len(g.Members) != 3 {
		t.Fatalf("group whose bootstrapper left: %+v", g)
	}
}

func TestPlanEmptyUniverse(t *testing.T) {
	tb, _ := NewTable(2, 3)
	tb = Plan(tb, names(3))
	if got := Plan(tb, nil); !got.Equal(tb) {
		t.Fatalf("Plan with no members changed the table")
	}
}

// checkPlan asserts Plan's invariants for one input.
func checkPlan(t *testing.T, tb Table, universe []string, rng *rand.Rand) {
	t.Helper()
	got := Plan(tb, universe)
	if err := got.Validate(); err != nil {
		t.Fatalf("Plan returned an invalid table: %v", err)
	}
	// Determinism: same answer twice, and for any order of members.
	shuffled := slices.Clone(universe)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if !Plan(tb, universe).Equal(got) || !Plan(tb, shuffled).Equal(got) {
		t.Fatalf("Plan is not deterministic for %v", universe)
	}
	uniq := slices.Compact(slices.Sorted(slices.Values(universe)))
	if len(uniq) == 0 {
		if !got.Equal(tb) {
			t.Fatalf("Plan with no members changed the table")
		}
		return
	}
	in := map[string]bool{}
	for _, m := range uniq {
		in[m] = true
	}
	allBootstrapped := true
	for i, g := range got.Groups {
		was := tb.Groups[i]
		if !was.Bootstrapped && len(was.Members) > 0 && in[was.Bootstrapper] {
			if !slices.Equal(g.Members, was.Members) || g.Bootstrapper != was.Bootstrapper {
				t.Fatalf("unbootstrapped group %d changed", g.ID)
			}
			allBootstrapped = false
			continue
		}
		if g.Bootstrapped != was.Bootstrapped {
			t.Fatalf("group %d: Plan changed the bootstrapped flag", g.ID)
		}
		if !g.Bootstrapped {
			allBootstrapped = false
		}
		if len(g.Members) != min(tb.RF, len(uniq)) {
			t.Fatalf("group %d has %d members, want %d", g.ID, len(g.Members), min(tb.RF, len(uniq)))
		}
		for _, m := range g.Members {
			if !in[m] {
				t.Fatalf("group %d keeps %q, not a member", g.ID, m)
			}
		}
	}
	if allBootstrapped || !anyFixed(tb, in) {
		r, l := counts(got)
		if s := spread(r, uniq); s > 1 {
			t.Fatalf("replica counts %v spread %d over %v", r, s, uniq)
		}
		if s := spread(l, uniq); s > 1 && leaderBalanceReachable(got, uniq) {
			t.Fatalf("leader counts %v spread %d over %v (table %+v)", l, s, uniq, got)
		}
	}
	// Idempotent: planning the plan changes nothing, and neither does
	// planning again once the new groups are bootstrapped (when the input
	// had no groups Plan must leave alone, which may hold anything).
	if again := Plan(got, universe); !again.Equal(got) {
		t.Fatalf("Plan is not idempotent:\n%v", Diff(got, again))
	}
	if !anyFixed(tb, in) {
		done := bootstrapAll(got.Clone())
		if again := Plan(done, universe); !again.Equal(done) {
			t.Fatalf("Plan after bootstrapping is not stable:\n%v", Diff(done, again))
		}
	}
}

// anyFixed reports whether tb has groups Plan must leave alone.
func anyFixed(tb Table, in map[string]bool) bool {
	for _, g := range tb.Groups {
		if !g.Bootstrapped && len(g.Members) > 0 && in[g.Bootstrapper] {
			return true
		}
	}
	return false
}

// leaderBalanceReachable: a spread of at most one is possible only when
// every member can lead some group; with fewer groups than members (or
// replica sets that exclude someone) the best spread can be larger. The
// planner's chain search is optimal, so this only excludes cases where no
// assignment reaches ±1: a member that hosts nothing while another would
// have to lead two.
func leaderBalanceReachable(t Table, universe []string) bool {
	r, _ := counts(t)
	for _, m := range universe {
		if r[m] == 0 && t.P() > len(universe) {
			return false
		}
	}
	return true
}

func randomTable(rng *rand.Rand, pool []string) Table {
	p, rf := 1+rng.IntN(16), 1+rng.IntN(5)
	tb, _ := NewTable(p, rf)
	for i := range tb.Groups {
		g := &tb.Groups[i]
		for _, m := range pool {
			if rng.IntN(3) == 0 && len(g.Members) < rf+1 {
				g.Members = append(g.Members, m)
			}
		}
		if len(g.Members) > 0 {
			g.Bootstrapper = g.Members[rng.IntN(len(g.Members))]
			g.Bootstrapped = rng.IntN(4) != 0
		}
	}
	return tb
}

func randomUniverse(rng *rand.Rand, pool []string) []string {
	var u []string
	for _, m := range pool {
		if rng.IntN(2) == 0 {
			u = append(u, m)
		}
	}
	if len(u) > 0 && rng.IntN(4) == 0 {
		u = append(u, u[0]) // a duplicate
	}
	return u
}

func TestPlanRandomized(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := names(9)
	for i := 0; i < 3000; i++ {
		tb := randomTable(rng, pool)
		if err := tb.Validate(); err != nil {
			t.Fatalf("random table invalid: %v", err)
		}
		checkPlan(t, tb, randomUniverse(rng, pool), rng)
	}
}

func FuzzPlan(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(42), uint64(7))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		rng := rand.New(rand.NewPCG(a, b))
		pool := names(9)
		tb := randomTable(rng, pool)
		checkPlan(t, tb, randomUniverse(rng, pool), rng)
	})
}

func BenchmarkBucket(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		_ = Bucket("order-12345")
	}
}

func BenchmarkPlan(b *testing.B) {
	tb, _ := NewTable(16, 3)
	tb = bootstrapAll(Plan(tb, names(8)))
	for b.Loop() {
		_ = Plan(tb, names(9))
	}
}

// TestTableOwners: a table without owners places bucket b in 1 + b mod P
// and encodes as tables always did (no "owners" field, which members of
// earlier releases would refuse); with owners, every bucket is where they
// say, they round-trip, and an owner outside 1..P or a wrong count is
// refused.
func TestTableOwners(t *testing.T) {
	tab, err := NewTable(4, 3)
	if err != nil {
		t.Fatal(err)
	}
	for b := 0; b < Buckets; b++ {
		if tab.Owner(b) != GroupOf(b, 4) {
			t.Fatalf("bucket %d: owner %d, want %d", b, tab.Owner(b), GroupOf(b, 4))
		}
	}
	if k := "order-17"; tab.GroupFor(k) != GroupForKey(k, 4) {
		t.Fatalf("GroupFor(%q) = %d, want %d", k, tab.GroupFor(k), GroupForKey(k, 4))
	}
	raw, err := Encode(tab)
	if err != nil || strings.Contains(string(raw), "owners") {
		t.Fatalf("a table without owners encodes as %s (%v)", raw, err)
	}

	moved := tab.Clone()
	moved.Owners = make([]uint64, Buckets)
	for b := range moved.Owners {
		moved.Owners[b] = tab.Owner(b)
	}
	moved.Owners[7] = 1
	if moved.Equal(tab) {
		t.Fatal("a moved bucket leaves the table equal")
	}
	if got := moved.BucketsOf(1); !slices.Contains(got, 7) || len(got) != len(tab.BucketsOf(1))+1 {
		t.Fatalf("BucketsOf(1) after the move: %v", got)
	}
	raw, err = Encode(moved)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(raw)
	if err != nil || !back.Equal(moved) || back.Owner(7) != 1 {
		t.Fatalf("round trip: %v, %+v", err, back.Owners)
	}
	bad := moved.Clone()
	bad.Owners[3] = 5
	if _, err := Encode(bad); err == nil {
		t.Fatal("an owner outside 1..P was accepted")
	}
	bad.Owners = bad.Owners[:10]
	if err := bad.Validate(); err == nil {
		t.Fatal("ten owners were accepted")
	}
}
