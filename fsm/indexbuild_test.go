package fsm

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/indexset"
	"github.com/kvnode/kvnode/index"
	"github.com/kvnode/kvnode/region"
)

// Index builds racing writes. The regions are larger than
// indexset.InlineBudget, so every build runs in the background; the checks
// compare each installed index, entry by entry, with one built from
// scratch on the final entries (checkIndexes).

// defVariant returns set i (0, 1 or 2) of the index definitions the tests
// switch between: the same names over other paths, dropped and added
// indexes.
func defVariant(i int) map[string][]index.Def {
	return []map[string][]index.Def{
		{
			"a": {{Name: "byCust", Path: []string{"cust"}}, {Name: "byName", Path: []string{"name"}}},
			"p": {{Name: "byCust", Path: []string{"cust"}}, {Name: "byCity", Path: []string{"addr", "city"}}},
		},
		{
			"a": {{Name: "byCust", Path: []string{"name"}}, {Name: "byCity", Path: []string{"addr", "city"}}},
			"p": {{Name: "byCust", Path: []string{"cust"}}},
		},
		{
			"a": {{Name: "byName", Path: []string{"name"}}},
			"p": {{Name: "byCity", Path: []string{"addr", "city"}}, {Name: "byName", Path: []string{"name"}}},
		},
	}[i]
}

// defVariants is how many sets defVariant has.
const defVariants = 3

// randomValue is a value whose indexed members are of every kind, absent,
// null or not scalars, drawn from few distinct values so keys share them.
func randomValue(rng *rand.Rand) string {
	c := rng.IntN(40)
	switch rng.IntN(10) {
	case 0:
		return `{}`
	case 1:
		return fmt.Sprintf(`{"cust":"%d","name":null,"addr":"nowhere"}`, c)
	case 2:
		return fmt.Sprintf(`{"cust":%d.5,"name":true,"addr":{"city":%d}}`, c, c)
	case 3:
		return `{"cust":[1],"name":{"x":1},"addr":{"city":null}}`
	}
	return fmt.Sprintf(`{"cust":%d,"name":"n%d","addr":{"city":"c%d"}}`, c, c%7, c%5)
}

// churn applies random commands to regions a (group 0 style) and p (a
// partition group's, incarnation *pid). Refusals are fine: they must not
// change anything either. With rare set it may also clear, destroy and
// recreate, replace the partition incarnation, change the index
// definitions or restore a snapshot.
type churn struct {
	t   *testing.T
	n   *node
	rng *rand.Rand
	pid uint64
}

func (c *churn) key() string { return fmt.Sprintf("k%05d", c.rng.IntN(4000)) }

// region picks a or p and returns the name and ID for a command.
func (c *churn) region() (string, uint64) {
	if c.rng.IntN(2) == 0 {
		return "a", 0
	}
	return "p", c.pid
}

func (c *churn) step(rare bool) {
	name, id := c.region()
	cmd := codec.Command{Region: name, RegionID: id}
	switch op := c.rng.IntN(100); {
	case op < 35:
		cmd.Op = codec.OpPut
		for range 1 + c.rng.IntN(5) {
			cmd.Entries = append(cmd.Entries, region.Entry{Key: c.key(), Value: json.RawMessage(randomValue(c.rng))})
		}
	case op < 45:
		cmd.Op = codec.OpPutIfAbsent
		key := c.key()
		if c.rng.IntN(2) == 0 {
			key = "" // a generated key
		}
		cmd.Entries = []region.Entry{{Key: key, Value: json.RawMessage(randomValue(c.rng))}}
	case op < 55:
		cmd.Op = codec.OpReplace
		cmd.Entries = []region.Entry{{Key: c.key(), Value: json.RawMessage(randomValue(c.rng))}}
	case op < 70:
		cmd.Op = codec.OpCAS
		key := c.key()
		old, err := c.n.f.Get(name, id, key)
		if err != nil || c.rng.IntN(4) == 0 {
			old = json.RawMessage(randomValue(c.rng)) // most likely a mismatch
		}
		cmd.Pairs = []region.CASPair{{Key: key, Old: old, New: json.RawMessage(randomValue(c.rng))}}
	case op < 96:
		cmd.Op = codec.OpDelete
		cmd.Keys = []string{c.key()}
		if _, err := c.n.f.Get(name, id, cmd.Keys[0]); err != nil {
			cmd.Keys[0] = c.firstKey(name, id)
		}
	default:
		// Many distinct keys at once: more than indexset's finishBelow, so a build
		// that sees them catches up off the lock before installing.
		cmd.Op = codec.OpPut
		start := c.rng.IntN(2500)
		for i := start; i < start+400; i++ {
			cmd.Entries = append(cmd.Entries, region.Entry{Key: fmt.Sprintf("k%05d", i), Value: json.RawMessage(randomValue(c.rng))})
		}
	}
	if cmd.Op == codec.OpDelete && cmd.Keys[0] == "" {
		return
	}
	c.n.apply(cmd)
	if rare {
		c.rareStep()
	}
}

// firstKey is the region's first key, "" if it is empty or missing.
func (c *churn) firstKey(name string, id uint64) string {
	l, err := c.n.f.List(name, id, 1)
	if err != nil || len(l) == 0 {
		return ""
	}
	return l[0].Key
}

func (c *churn) rareStep() {
	switch c.rng.IntN(16) {
	case 0:
		c.n.apply(codec.Command{Op: codec.OpClear, Region: "a"})
	case 1:
		c.n.apply(codec.Command{Op: codec.OpClearPart, Region: "p", RegionID: c.pid})
	case 2:
		c.n.apply(codec.Command{Op: codec.OpDestroyRegion, Region: "a"})
		c.n.apply(codec.Command{Op: codec.OpCreateRegion, Region: "a", Kind: region.Replicate})
		c.fill("a", 0, c.rng.IntN(3000))
	case 3:
		// A newer incarnation of p replaces this group's entries of it.
		c.pid++
		c.fill("p", c.pid, c.rng.IntN(3000))
	case 4:
		c.n.apply(codec.Command{Op: codec.OpDestroyRegion, Region: "p", RegionID: c.pid})
		c.pid++
	case 5:
		v := c.rng.IntN(defVariants)
		c.n.f.Indexes().Set(uint64(v+1), defVariant(v))
	case 6:
		if err := restore(c.n.f, persist(c.t, c.n.f)); err != nil {
			c.t.Errorf("restore: %v", err)
		}
	}
}

// fill puts count entries into a region, 500 per command.
func (c *churn) fill(name string, id uint64, count int) {
	for start := 0; start < count; start += 500 {
		cmd := codec.Command{Op: codec.OpPut, Region: name, RegionID: id}
		for i := start; i < min(start+500, count); i++ {
			cmd.Entries = append(cmd.Entries, region.Entry{Key: fmt.Sprintf("k%05d", i), Value: json.RawMessage(randomValue(c.rng))})
		}
		c.n.apply(cmd)
	}
}

// newChurn returns an FSM with regions a and p (incarnation 5), 2500 to
// 3500 entries each.
func newChurn(t *testing.T, seed uint64) *churn {
	c := &churn{t: t, n: newNode(t), rng: rand.New(rand.NewPCG(seed, 16)), pid: 5}
	c.n.create("a", region.Replicate)
	c.fill("a", 0, 2500+c.rng.IntN(1000))
	c.fill("p", c.pid, 2500+c.rng.IntN(1000))
	return c
}

// buildRegion finds the region whose index b builds: its name and state,
// and whether b is current, that is the region is still in f's state and b
// still its build for that index.
func buildRegion(f *FSM, b *indexset.Build) (name string, r *regionState, current bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for name, r := range f.st.regions {
		if &r.indexes == b.Set() {
			return name, r, r.indexes.Building(b.Def().Name) == b
		}
	}
	return "", nil, false
}

// checkNotServed fails when the index b builds can be read while b is still
// the region's build for it: a half-built index must never serve a query.
func checkNotServed(t *testing.T, f *FSM, b *indexset.Build) {
	t.Helper()
	name, r, current := buildRegion(f, b)
	if !current {
		return
	}
	id := uint64(0) // group 0's region: read by name
	if r.kind == region.Partition {
		id = r.id
	}
	// Only b installs b, and b is in its hook: if b is current now, it is
	// still current below (the caller keeps every write out meanwhile).
	if got := f.Indexes().Len(name, id, b.Def().Name); got != -1 {
		t.Errorf("index %q of %q answers (%d entries) while it is being built", b.Def().Name, name, got)
	}
	served, err := f.Indexes().Scan(name, id, b.Def().Name, []index.Range{{Lo: int64(0), LoIncl: true}}, func(string, json.RawMessage) bool { return true })
	if served || err != nil {
		t.Errorf("IndexScan of %q on %q while it is being built = %v, %v; want a fallback to a scan", b.Def().Name, name, served, err)
	}
}

// TestIndexBuildsUnderInterleavedWrites lands random writes in every phase
// of background builds: while the index is built from the clone (round 0)
// and during each catch-up round, including clears, destroy and recreate,
// a replaced partition incarnation, changed definitions and restores.
// Every index installed at the end must equal a fresh build, and no index
// may answer while it is being built.
func TestIndexBuildsUnderInterleavedWrites(t *testing.T) {
	seeds := 30
	if raceEnabled || testing.Short() {
		seeds = 10
	}
	for seed := range uint64(seeds) {
		c := newChurn(t, seed)
		var mu sync.Mutex
		hooks, rounds := 0, 0
		frozen := false
		c.n.f.buildHook = func(b *indexset.Build, round int) {
			mu.Lock() // every write of this test happens under mu
			defer mu.Unlock()
			checkNotServed(t, c.n.f, b)
			hooks++
			rounds = max(rounds, round)
			if hooks > 40 || frozen { // every build must end: stop writing after a while
				return
			}
			for range c.rng.IntN(30) {
				c.step(c.rng.IntN(10) == 0)
			}
		}
		c.n.f.Indexes().Set(1, defVariant(0))
		wait := func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := c.n.f.Indexes().Wait(ctx); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
		wait()
		// The hook of a build abandoned by a restore, a destroy or changed
		// definitions may still be writing, and start new builds: stop the
		// writes, then wait for what they started.
		mu.Lock()
		frozen = true
		mu.Unlock()
		wait()
		// An abandoned build's hook may still run: read the counts under mu.
		mu.Lock()
		hookCalls, maxRound := hooks, rounds
		mu.Unlock()
		if hookCalls == 0 {
			t.Fatalf("seed %d: no build ran in the background", seed)
		}
		checkIndexes(t, c.n.f)
		// Installed indexes follow later writes.
		mu.Lock()
		for range 200 {
			c.step(false)
		}
		mu.Unlock()
		checkIndexes(t, c.n.f)
		if t.Failed() {
			t.Fatalf("seed %d failed (%d hook calls, up to round %d)", seed, hookCalls, maxRound)
		}
		t.Logf("seed %d: %d hook calls, up to round %d", seed, hookCalls, maxRound)
	}
}

// TestIndexBuildsRacingAWriter runs a writer goroutine applying random
// commands (with clears, destroys, recreations and restores) while the
// index definitions change again and again, so builds start, get
// abandoned and install at arbitrary points of the writes.
func TestIndexBuildsRacingAWriter(t *testing.T) {
	seeds := 8
	if raceEnabled || testing.Short() {
		seeds = 3
	}
	for seed := range uint64(seeds) {
		c := newChurn(t, 1000+seed)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200_000; i++ { // a bound; stop comes first
				select {
				case <-stop:
					return
				default:
				}
				c.step(c.rng.IntN(200) == 0)
			}
		}()
		rng := rand.New(rand.NewPCG(seed, 61))
		for i := range 12 {
			v := rng.IntN(defVariants)
			c.n.f.Indexes().Set(uint64(100+i), defVariant(v))
			if rng.IntN(2) == 0 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				if err := c.n.f.Indexes().Wait(ctx); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				cancel()
			} else {
				time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
			}
		}
		close(stop)
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := c.n.f.Indexes().Wait(ctx)
		cancel()
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkIndexes(t, c.n.f)
		if t.Failed() {
			t.Fatalf("seed %d failed", seed)
		}
	}
}

// TestIndexBuildKeepsDefinitionsAndRestartsNothing: setting the same
// definitions again while a build runs keeps that build (it is the one
// that installs), and the version is the latest one set.
func TestIndexBuildKeepsDefinitionsAndRestartsNothing(t *testing.T) {
	c := newChurn(t, 7)
	f := c.n.f
	var once sync.Once
	var first *indexset.Build
	f.buildHook = func(b *indexset.Build, round int) {
		once.Do(func() {
			first = b
			f.Indexes().Set(2, defVariant(0)) // the same definitions, a new label
			f.mu.RLock()
			still := b.Set().Building(b.Def().Name) == b
			f.mu.RUnlock()
			if !still {
				t.Errorf("setting the same definitions again replaced the build of %q", b.Def().Name)
			}
		})
	}
	f.Indexes().Set(1, defVariant(0))
	if f.Indexes().Version() != 1 {
		t.Fatalf("IndexVersion = %d right after SetIndexes(1), want 1", f.Indexes().Version())
	}
	if err := f.Indexes().Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if first == nil {
		t.Fatal("no build ran in the background")
	}
	if f.Indexes().Version() != 2 {
		t.Fatalf("IndexVersion = %d, want 2", f.Indexes().Version())
	}
	checkIndexes(t, f)
}

// TestRestoreBuildsIndexesInTheBackground: Restore returns before the
// indexes of a large region are built; queries scan until they are, and
// then find them complete.
func TestRestoreBuildsIndexesInTheBackground(t *testing.T) {
	c := newChurn(t, 9)
	snap := persist(t, c.n.f)
	f := New(Options{})
	f.Indexes().Set(1, defVariant(0))
	release := make(chan struct{})
	f.buildHook = func(b *indexset.Build, round int) {
		if round == 0 {
			<-release
		}
	}
	if err := restore(f, snap); err != nil {
		t.Fatal(err)
	}
	// The builds wait in their hooks: the restore did not wait for them.
	if got := f.Indexes().Len("a", 0, "byCust"); got != -1 {
		t.Fatalf("IndexLen right after Restore = %d, want -1 (still building)", got)
	}
	served, err := f.Indexes().Scan("a", 0, "byCust", []index.Range{index.Point(int64(3))}, func(string, json.RawMessage) bool { return true })
	if served || err != nil {
		t.Fatalf("IndexScan during the build = %v, %v; want a fallback to a scan", served, err)
	}
	close(release)
	if err := f.Indexes().Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, f)
	if f.Indexes().Len("a", 0, "byCust") < 0 || f.Indexes().Len("p", 5, "byCity") < 0 {
		t.Fatal("indexes missing after the restore's builds")
	}
}

func TestWaitIndexesEndsWithItsContext(t *testing.T) {
	c := newChurn(t, 11)
	release := make(chan struct{})
	c.n.f.buildHook = func(*indexset.Build, int) { <-release }
	defer close(release)
	c.n.f.Indexes().Set(1, defVariant(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.n.f.Indexes().Wait(ctx); err == nil || ctx.Err() == nil {
		t.Fatalf("WaitIndexes = %v with builds held back, want the context's error", err)
	}
}
