package fsm

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/index"
	"github.com/kvnode/kvnode/region"
)

// Entry time-to-live: deadlines by the group's clock, hidden by the
// reader's, removed by expire commands.

// memberClock is a member's clock a test sets (unix milliseconds).
type memberClock struct{ ms atomic.Int64 }

func (c *memberClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }
func (c *memberClock) set(ms int64)   { c.ms.Store(ms) }

// newTimedNode is a node of group whose member clock the test sets; it
// starts at the epoch, so reads judge deadlines by the group's clock
// until the test moves it.
func newTimedNode(t *testing.T, group uint64) (*node, *memberClock) {
	clk := &memberClock{}
	return &node{t: t, f: New(Options{Group: group, Clock: clk.now})}, clk
}

// putAt puts key=value pairs stamped now with ttl (milliseconds).
func putAt(name string, now, ttl uint64, kv ...string) codec.Command {
	return codec.Command{Op: codec.OpPut, Region: name, Entries: entries(kv...), Now: now, TTL: ttl}
}

// tick moves the group's clock to now with a command that changes nothing
// (an expire of no key).
func tick(now uint64) codec.Command {
	return codec.Command{Op: codec.OpExpire, Region: "r", Now: now}
}

func expireAt(name string, id, now uint64, keys ...string) codec.Command {
	return codec.Command{Op: codec.OpExpire, Region: name, RegionID: id, Keys: keys, Now: now}
}

func checkDue(t *testing.T, f *FSM, max int, want []DueKeys) {
	t.Helper()
	if got := f.Due(max); !reflect.DeepEqual(got, want) {
		t.Errorf("Due(%d) = %+v, want %+v", max, got, want)
	}
}

func checkNextDeadline(t *testing.T, f *FSM, want uint64, wantOK bool) {
	t.Helper()
	if got, ok := nextDeadline(f); got != want || ok != wantOK {
		t.Errorf("NextDeadline() = %d, %v; want %d, %v", got, ok, want, wantOK)
	}
}

// TestDeadlineIsGroupClockPlusTTL: a write's deadline is the group's clock
// plus its TTL, and the group's clock is the latest Now applied: a command
// stamped by a member whose clock is behind neither shortens nor extends
// anything.
func TestDeadlineIsGroupClockPlusTTL(t *testing.T) {
	n, clk := newTimedNode(t, 0)
	n.create("r", region.Replicate)
	checkNextDeadline(t, n.f, 0, false)
	n.must(putAt("r", 10_000, 1_000, "a", `1`))
	checkNextDeadline(t, n.f, 11_000, true)
	n.must(putAt("r", 9_000, 1_000, "b", `2`)) // a member 1 s behind: still 10_000 + 1_000
	n.must(putAt("r", 4_000, 5_000, "c", `3`)) // 10_000 + 5_000, not 4_000 + 5_000
	clk.set(10_999)
	checkDue(t, n.f, 10, nil)
	clk.set(11_000)
	checkDue(t, n.f, 10, []DueKeys{{Region: "r", Keys: []string{"a", "b"}}})
	clk.set(14_999)
	checkDue(t, n.f, 10, []DueKeys{{Region: "r", Keys: []string{"a", "b"}}})
	clk.set(15_000)
	checkDue(t, n.f, 10, []DueKeys{{Region: "r", Keys: []string{"a", "b", "c"}}})
	checkDue(t, n.f, 2, []DueKeys{{Region: "r", Keys: []string{"a", "b"}}})

	// The group's clock does not move back: at 11_000 a is past its
	// deadline for a write stamped 10_500, which replaces an expired entry.
	clk.set(0)
	n.must(tick(11_000))
	_, got := n.applied("r", putAt("r", 10_500, 0, "a", `4`))
	checkEvents(t, "a write stamped before the group's clock over an entry past its deadline", got, []string{
		ev(n.index, 1, region.EventExpire, "a", "", "1"),
		ev(n.index, 2, region.EventCreate, "a", "4", ""),
	})
	checkNextDeadline(t, n.f, 11_000, true) // b's
}

// TestWritesOverExpiredEntries: an entry past its deadline by the group's
// clock is absent for every write, even before its removal is applied:
// a write over it is its expire and a create; put-if-absent succeeds;
// replace, CAS, delete and delete-if are refused as for a missing key and
// change nothing.
func TestWritesOverExpiredEntries(t *testing.T) {
	n, _ := newTimedNode(t, 0)
	n.create("r", region.Replicate)
	n.must(putAt("r", 1_000, 100, "a", `{"a":1}`, "b", `{"b":1}`, "c", `{"c":1}`))
	n.must(tick(1_100))
	for _, c := range []struct {
		cmd  codec.Command
		want error
	}{
		{codec.Command{Op: codec.OpReplace, Region: "r", Entries: entries("a", `2`), Now: 1_100}, region.ErrKeyAbsent},
		{codec.Command{Op: codec.OpCAS, Region: "r", Pairs: []region.CASPair{{Key: "a", Old: []byte(`{"a":1}`), New: []byte(`2`)}}, Now: 1_100}, region.ErrKeyAbsent},
		{codec.Command{Op: codec.OpDelete, Region: "r", Keys: []string{"a"}, Now: 1_100}, region.ErrKeyNotFound},
		{codec.Command{Op: codec.OpDeleteIf, Region: "r", Entries: entries("a", `{"a":1}`), Now: 1_100}, region.ErrKeyNotFound},
		{codec.Command{Op: codec.OpPutIfAbsent, Region: "r", Entries: entries("", `{"g":1}`), Now: 1_100}, nil},
	} {
		res, got := n.applied("r", c.cmd)
		if c.want != nil {
			if !errors.Is(res.Err, c.want) {
				t.Errorf("%v of an expired key: %v, want %v", c.cmd.Op, res.Err, c.want)
			}
			checkEvents(t, c.cmd.Op.String()+" of an expired key", got, nil)
		}
	}
	if _, err := n.f.Get("r", 0, "a"); !errors.Is(err, region.ErrKeyNotFound) {
		t.Errorf("Get of an entry past its deadline by the group's clock: %v, want ErrKeyNotFound", err)
	}

	res, got := n.applied("r", codec.Command{Op: codec.OpPutIfAbsent, Region: "r", Entries: entries("a", `{"a":2}`), Now: 1_100})
	if res.Err != nil || res.Key != "a" {
		t.Fatalf("put-if-absent over an expired entry: %+v, want it written", res)
	}
	checkEvents(t, "put-if-absent over an expired entry", got, []string{
		ev(n.index, 1, region.EventExpire, "a", "", `{"a":1}`),
		ev(n.index, 2, region.EventCreate, "a", `{"a":2}`, ""),
	})
	_, got = n.applied("r", putAt("r", 1_100, 0, "b", `{"b":2}`, "b", `{"b":3}`, "c", `{"c":2}`))
	checkEvents(t, "put-all over expired entries", got, []string{
		ev(n.index, 1, region.EventExpire, "b", "", `{"b":1}`),
		ev(n.index, 2, region.EventCreate, "b", `{"b":2}`, ""),
		ev(n.index, 3, region.EventUpdate, "b", `{"b":3}`, `{"b":2}`),
		ev(n.index, 4, region.EventExpire, "c", "", `{"c":1}`),
		ev(n.index, 5, region.EventCreate, "c", `{"c":2}`, ""),
	})
	// The new entries have no deadline: nothing left to expire.
	checkNextDeadline(t, n.f, 0, false)
	if got, _ := n.f.Keys("r", 0); len(got) != 4 || !slices.Contains(got, "a") || !slices.Contains(got, "b") || !slices.Contains(got, "c") {
		t.Errorf("keys = %q, want a, b, c and the generated one", got)
	}
}

// TestReadsHideExpiredEntries: every read hides an entry once the member's
// clock passes its deadline, before any expire command.
func TestReadsHideExpiredEntries(t *testing.T) {
	n, clk := newTimedNode(t, 0)
	n.f.Indexes().Set(1, map[string][]index.Def{"r": {{Name: "byCust", Path: []string{"cust"}}}})
	n.create("r", region.Replicate)
	n.must(putAt("r", 1_000, 500, "a", `{"cust":1}`))
	n.must(putAt("r", 1_000, 0, "b", `{"cust":1}`))
	n.must(putAt("r", 1_000, 900, "c", `{"cust":1}`))

	type view struct {
		get      error
		many     []string
		list     []string
		limited  []string
		keys     []string
		count    int
		scan     []string
		indexed  []string
		captured []string
	}
	read := func() view {
		var v view
		_, v.get = n.f.Get("r", 0, "a")
		many, _ := n.f.GetMany("r", 0, []string{"a", "b"})
		for _, m := range many {
			v.many = append(v.many, string(m))
		}
		list, _ := n.f.List("r", 0, -1)
		for _, e := range list {
			v.list = append(v.list, e.Key)
		}
		list, _ = n.f.List("r", 0, 1)
		for _, e := range list {
			v.limited = append(v.limited, e.Key)
		}
		v.keys, _ = n.f.Keys("r", 0)
		v.count, _ = n.f.Count("r", 0)
		_ = n.f.Scan("r", 0, func(key string, _ json.RawMessage) bool { v.scan = append(v.scan, key); return true })
		v.indexed = indexed(t, n.f, "r", index.Point(int64(1)))
		sort.Strings(v.indexed)
		if _, err := capture(n.f, "r", 0, func(key string, _ json.RawMessage) error { v.captured = append(v.captured, key); return nil }); err != nil {
			t.Fatal(err)
		}
		return v
	}
	abc := []string{"a", "b", "c"}
	clk.set(1_499)
	if got, want := read(), (view{many: []string{`{"cust":1}`, `{"cust":1}`}, list: abc, limited: []string{"a"}, keys: abc, count: 3, scan: abc, indexed: abc, captured: abc}); !reflect.DeepEqual(got, want) {
		t.Errorf("reads before the deadline:\n got %+v\nwant %+v", got, want)
	}
	clk.set(1_500)
	bc := []string{"b", "c"}
	got := read()
	if !errors.Is(got.get, region.ErrKeyNotFound) {
		t.Errorf("Get of an expired entry: %v, want ErrKeyNotFound", got.get)
	}
	got.get = nil
	if want := (view{many: []string{"", `{"cust":1}`}, list: bc, limited: []string{"b"}, keys: bc, count: 2, scan: bc, indexed: bc, captured: bc}); !reflect.DeepEqual(got, want) {
		t.Errorf("reads past a's deadline:\n got %+v\nwant %+v", got, want)
	}
	// A member whose clock is behind the group's judges by the group's.
	clk.set(0)
	n.must(tick(1_900))
	if got := read(); got.count != 1 || !slices.Equal(got.keys, []string{"b"}) {
		t.Errorf("reads by a member clock behind the group's 1_900: count %d keys %q, want 1 [b]", got.count, got.keys)
	}
}

// TestExpireCommand: an expire removes the keys listed that are past their
// deadline at the command's time (the group's clock), each with an expire
// event; a key written again since, deleted, or never there is left alone.
func TestExpireCommand(t *testing.T) {
	n, clk := newTimedNode(t, 0)
	n.create("r", region.Replicate)
	n.must(putAt("r", 1_000, 500, "a", `"a"`, "b", `"b"`, "c", `"c"`, "d", `"d"`))
	n.must(putAt("r", 1_000, 0, "e", `"e"`))
	clk.set(1_600)
	checkDue(t, n.f, 100, []DueKeys{{Region: "r", Keys: []string{"a", "b", "c", "d"}}})
	clk.set(0)
	// While the expire is on its way: b is written again, c deleted, d
	// written without a time-to-live.
	n.must(putAt("r", 1_400, 1_000, "b", `"b2"`))
	n.must(codec.Command{Op: codec.OpDelete, Region: "r", Keys: []string{"c"}, Now: 1_450})
	n.must(putAt("r", 1_450, 0, "d", `"d2"`))
	res, got := n.applied("r", expireAt("r", 0, 1_600, "a", "b", "c", "d", "e", "never"))
	if res.Err != nil {
		t.Fatalf("expire: %v", res.Err)
	}
	checkEvents(t, "expire", got, []string{ev(n.index, 1, region.EventExpire, "a", "", `"a"`)})
	if keys, _ := n.f.Keys("r", 0); !slices.Equal(keys, []string{"b", "d", "e"}) {
		t.Errorf("keys after the expire = %q, want [b d e]", keys)
	}
	checkNextDeadline(t, n.f, 2_400, true) // b: 1_400 + 1_000

	// Once the group's clock reaches b's deadline, b goes.
	_, got = n.applied("r", expireAt("r", 0, 2_500, "b"))
	checkEvents(t, "expire at the deadline", got, []string{ev(n.index, 1, region.EventExpire, "b", "", `"b2"`)})
	checkNextDeadline(t, n.f, 0, false)

	n.must(putAt("r", 3_000, 100, "f", `"f"`))
	_, got = n.applied("r", expireAt("r", 0, 2_000, "f")) // group clock 3_000 < 3_100
	checkEvents(t, "expire stamped before the group's clock", got, nil)
	if _, err := n.f.Get("r", 0, "f"); err != nil {
		t.Errorf("f after an early expire: %v, want it kept", err)
	}
	// An expire of a region that is gone is nothing to do.
	if res := n.apply(expireAt("nope", 0, 9_000, "f")); res.Err != nil {
		t.Errorf("expire in a missing region: %v, want no error", res.Err)
	}
}

// TestDueInPartitionGroups: Due lists the due keys region by region, names
// ascending, with the region id an expire command of a partition group
// needs; the expire removes them with events carrying that id.
func TestDueInPartitionGroups(t *testing.T) {
	n, clk := newTimedNode(t, 3)
	n.must(codec.Command{Op: codec.OpPut, Region: "q", RegionID: 9, Entries: entries("q1", `1`, "q2", `2`), Now: 1_000, TTL: 100})
	n.must(codec.Command{Op: codec.OpPut, Region: "p", RegionID: 7, Entries: entries("p2", `1`), Now: 1_010, TTL: 100})
	n.must(codec.Command{Op: codec.OpPut, Region: "p", RegionID: 7, Entries: entries("p1", `1`), Now: 1_020, TTL: 100})
	n.must(codec.Command{Op: codec.OpPut, Region: "p", RegionID: 7, Entries: entries("p3", `1`), Now: 1_020, TTL: 1_000})
	checkNextDeadline(t, n.f, 1_100, true)
	clk.set(1_200)
	checkDue(t, n.f, 100, []DueKeys{
		{Region: "p", RegionID: 7, Keys: []string{"p2", "p1"}}, // in deadline order
		{Region: "q", RegionID: 9, Keys: []string{"q1", "q2"}},
	})
	checkDue(t, n.f, 3, []DueKeys{
		{Region: "p", RegionID: 7, Keys: []string{"p2", "p1"}},
		{Region: "q", RegionID: 9, Keys: []string{"q1"}},
	})
	for _, d := range n.f.Due(100) {
		n.must(expireAt(d.Region, d.RegionID, 1_200, d.Keys...))
	}
	checkDue(t, n.f, 100, nil)
	if got := evs(allEvents(n.f)[5:]); !slices.Equal(got, []string{
		"5.1 expire p#7 p2= old=1", "5.2 expire p#7 p1= old=1", "6.1 expire q#9 q1= old=1", "6.2 expire q#9 q2= old=2",
	}) {
		t.Errorf("events of the expires: %q", got)
	}
	if keys, _ := n.f.Keys("p", 7); !slices.Equal(keys, []string{"p3"}) {
		t.Errorf("keys of p = %q, want [p3]", keys)
	}
	checkNextDeadline(t, n.f, 2_020, true)
	// An expire for an older incarnation changes nothing.
	clk.set(5_000)
	if res, got := n.applied("p", expireAt("p", 6, 5_000, "p3")); res.Err != nil || len(got) != 0 {
		t.Errorf("expire of an older incarnation: %v, events %q; want nothing done", res.Err, got)
	}
}

// TestRegionTimeToLive: create-region and alter-region set a region's
// default entry time-to-live (Region reports it in seconds); alter-region
// refuses a missing region or a partition group's command; existing
// entries keep their deadlines.
func TestRegionTimeToLive(t *testing.T) {
	n, clk := newTimedNode(t, 0)
	n.must(codec.Command{Op: codec.OpCreateRegion, Region: "s", Kind: region.Replicate, TTL: 60_000})
	n.create("r", region.Partition)
	ttl := func(name string) (int64, uint64) {
		t.Helper()
		info, ok := n.f.Region(name)
		ms, err := ttlOf(n.f, name)
		if !ok || err != nil {
			t.Fatalf("region %s: %v %v", name, ok, err)
		}
		return info.EntryTimeToLive, ms
	}
	if s, ms := ttl("s"); s != 60 || ms != 60_000 {
		t.Errorf("created with 60 s: EntryTimeToLive %d, TTL %d ms", s, ms)
	}
	if s, ms := ttl("r"); s != 0 || ms != 0 {
		t.Errorf("created without: EntryTimeToLive %d, TTL %d ms", s, ms)
	}
	n.must(putAt("s", 1_000, 60_000, "a", `1`))
	n.must(codec.Command{Op: codec.OpAlterRegion, Region: "s", TTL: 30_000, Now: 2_000})
	n.must(codec.Command{Op: codec.OpAlterRegion, Region: "r", TTL: 5_000})
	if s, ms := ttl("s"); s != 30 || ms != 30_000 {
		t.Errorf("altered to 30 s: EntryTimeToLive %d, TTL %d ms", s, ms)
	}
	if s, _ := ttl("r"); s != 5 {
		t.Errorf("partitioned region altered to 5 s: EntryTimeToLive %d", s)
	}
	clk.set(60_999)
	checkDue(t, n.f, 10, nil) // a keeps its deadline, 61_000
	clk.set(61_000)
	checkDue(t, n.f, 10, []DueKeys{{Region: "s", Keys: []string{"a"}}})
	n.must(codec.Command{Op: codec.OpAlterRegion, Region: "s"})
	if s, ms := ttl("s"); s != 0 || ms != 0 {
		t.Errorf("altered to 0: EntryTimeToLive %d, TTL %d ms", s, ms)
	}
	if res := n.apply(codec.Command{Op: codec.OpAlterRegion, Region: "nope", TTL: 1}); !errors.Is(res.Err, region.ErrRegionNotFound) {
		t.Errorf("alter of a missing region: %v, want ErrRegionNotFound", res.Err)
	}
	if res := n.apply(codec.Command{Op: codec.OpAlterRegion, Region: "r", RegionID: 2, TTL: 1}); !errors.Is(res.Err, region.ErrInvalid) {
		t.Errorf("alter with a region id: %v, want ErrInvalid", res.Err)
	}
	if _, err := ttlOf(n.f, "nope"); !errors.Is(err, region.ErrRegionNotFound) {
		t.Errorf("TTL of a missing region: %v, want ErrRegionNotFound", err)
	}
}

// TestTTLZeroNeverExpires: an entry written without a time-to-live (or
// written again without one) never expires, whatever the clocks say.
func TestTTLZeroNeverExpires(t *testing.T) {
	n, clk := newTimedNode(t, 0)
	n.must(codec.Command{Op: codec.OpCreateRegion, Region: "r", Kind: region.Replicate, TTL: 1_000})
	n.must(putAt("r", 1_000, 0, "a", `1`))
	n.must(putAt("r", 1_000, 10, "b", `1`))
	n.must(putAt("r", 1_005, 0, "b", `2`)) // before b's deadline: its deadline is gone
	n.must(tick(1 << 60))
	clk.set(1 << 61)
	if keys, _ := n.f.Keys("r", 0); !slices.Equal(keys, []string{"a", "b"}) {
		t.Errorf("keys far in the future = %q, want [a b]", keys)
	}
	checkDue(t, n.f, 10, nil)
	checkNextDeadline(t, n.f, 0, false)
	if res := n.apply(expireAt("r", 0, 1<<61, "a", "b")); res.Err != nil {
		t.Fatal(res.Err)
	}
	if c, _ := n.f.Count("r", 0); c != 2 {
		t.Errorf("count after an expire of entries with no deadline = %d, want 2", c)
	}
}

// expiringCommand is the next command of a random log with time: mostly a
// randomCommand stamped now (or up to 300 ms earlier: a member whose clock
// is behind) with a time-to-live half of the time; sometimes an expire of
// what f (the leader) finds due, or an alter-region.
func expiringCommand(f *FSM, rng *rand.Rand, now uint64) codec.Command {
	switch rng.IntN(12) {
	case 0:
		if due := f.Due(5); len(due) > 0 {
			d := due[rng.IntN(len(due))]
			return expireAt(d.Region, d.RegionID, now-uint64(rng.IntN(50)), d.Keys...)
		}
	case 1:
		return codec.Command{Op: codec.OpAlterRegion, Region: "r", TTL: uint64(rng.IntN(3)) * 1_000, Now: now}
	}
	return randomCommand(rng, func(c *codec.Command) {
		c.Now = now - uint64(rng.IntN(300))
		if rng.IntN(2) == 0 {
			c.TTL = uint64(1 + rng.IntN(1_000))
		}
	})
}

// expireDue applies expires, stamped now, of everything n finds due.
func expireDue(n *node, now uint64) {
	n.t.Helper()
	for _, d := range n.f.Due(1 << 20) {
		n.must(expireAt(d.Region, d.RegionID, now, d.Keys...))
	}
}

// rawState renders everything the state machine decides, deadlines,
// entries past them and the group's clock included.
func rawState(f *FSM) string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var b strings.Builder
	fmt.Fprintf(&b, "now=%d lastKey=%d applied=%d floor=%v\n", f.st.now, f.st.lastKey, f.applied.Load(), f.History().Floor())
	names := make([]string, 0, len(f.st.regions))
	for name := range f.st.regions {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r := f.st.regions[name]
		fmt.Fprintf(&b, "%s(%s #%d ttl %d, %d bytes)", name, r.kind, r.id, r.ttl, r.bytes)
		r.entries.Ascend(func(e entry) bool {
			fmt.Fprintf(&b, " %s=%s@%d", e.key, e.value, e.expires)
			return true
		})
		b.WriteString("\n")
	}
	return b.String()
}

// TestDeterministicExpiry: replicas applying the same log (with clocks
// that disagree, time-to-lives and expires) end in the same state, with
// the same history and the same due keys, whether they applied every
// entry or restored a snapshot taken half-way and applied the rest.
func TestDeterministicExpiry(t *testing.T) {
	dueSeeds := 0
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 3))
		leader, leaderClock := newTimedNode(t, 0)
		var logs []*raft.Log
		apply := func(c codec.Command) {
			l := leader.log(c)
			leader.f.Apply(l)
			logs = append(logs, l)
		}
		apply(codec.Command{Op: codec.OpCreateRegion, Region: "r", Kind: region.Replicate, TTL: 500})
		apply(codec.Command{Op: codec.OpCreateRegion, Region: "s", Kind: region.Replicate})
		var now uint64 = 1_700_000_000_000
		var snap []byte
		var snapAt int
		for i := range 400 {
			now += uint64(rng.IntN(200))
			apply(expiringCommand(leader.f, rng, now))
			if i == 200 {
				snap, snapAt = persist(t, leader.f), len(logs)
			}
		}

		follower, followerClock := newTimedNode(t, 0)
		for rest := logs; len(rest) > 0; {
			k := min(len(rest), 1+rng.IntN(20))
			follower.f.ApplyBatch(rest[:k])
			rest = rest[k:]
		}
		restored, restoredClock := newTimedNode(t, 0)
		if err := restore(restored.f, snap); err != nil {
			t.Fatal(err)
		}
		restored.f.ApplyBatch(logs[snapAt:])

		// Members whose clocks are ahead of the group's see the same
		// entries due.
		for _, c := range []*memberClock{leaderClock, followerClock, restoredClock} {
			c.set(int64(now) + 700)
		}
		want := rawState(leader.f)
		wantEvents := evs(allEvents(leader.f))
		wantDue := leader.f.Due(1 << 20)
		wantNext, wantOK := nextDeadline(leader.f)
		if len(wantEvents) < 200 || !strings.Contains(strings.Join(wantEvents, "\n"), " expire ") {
			t.Fatalf("seed %d: %d events, some expire: %v; the log exercises too little", seed, len(wantEvents), strings.Contains(strings.Join(wantEvents, "\n"), " expire "))
		}
		if len(wantDue) > 0 {
			dueSeeds++
		}
		for _, r := range []struct {
			name string
			f    *FSM
		}{{"follower", follower.f}, {"restored", restored.f}} {
			if got := rawState(r.f); got != want {
				t.Fatalf("seed %d: %s state:\n%s\nwant the leader's:\n%s", seed, r.name, got, want)
			}
			if got := evs(allEvents(r.f)); !slices.Equal(got, wantEvents) {
				t.Fatalf("seed %d: %s history differs from the leader's", seed, r.name)
			}
			if got := r.f.Due(1 << 20); !reflect.DeepEqual(got, wantDue) {
				t.Fatalf("seed %d: %s Due = %v, want %v", seed, r.name, got, wantDue)
			}
			if got, ok := nextDeadline(r.f); got != wantNext || ok != wantOK {
				t.Fatalf("seed %d: %s NextDeadline = %d %v, want %d %v", seed, r.name, got, ok, wantNext, wantOK)
			}
			if got, want := dump(t, r.f), dump(t, leader.f); got != want {
				t.Fatalf("seed %d: %s reads:\n%s\nwant:\n%s", seed, r.name, got, want)
			}
		}
	}
	if dueSeeds < 5 {
		t.Fatalf("only %d of 10 logs end with keys due: Due is barely compared", dueSeeds)
	}
}

// TestTimeOfBatchAndStagedCommands: the sub-commands of a batch and a
// staged command carry their own time, which moves the group's clock like
// any command's.
func TestTimeOfBatchAndStagedCommands(t *testing.T) {
	n, clk := newTimedNode(t, 0)
	n.create("r", region.Replicate)
	a, b := putAt("r", 5_000, 100, "a", `1`), putAt("r", 4_000, 200, "b", `1`) // b: 5_000 + 200
	n.must(codec.Command{Op: codec.OpBatch, Batch: [][]byte{a.Encode(nil), b.Encode(nil)}})
	clk.set(5_099)
	checkDue(t, n.f, 10, nil)
	clk.set(5_200)
	checkDue(t, n.f, 10, []DueKeys{{Region: "r", Keys: []string{"a", "b"}}})
	cmd, _ := bigPut("r", "big", codec.StageChunkBytes+10)
	cmd.Now, cmd.TTL = 9_000, 100
	if res := n.applyRaw(codec.StageCommand(1, cmd.Encode(nil))...); res.Err != nil {
		t.Fatalf("staged put: %v", res.Err)
	}
	clk.set(0)
	checkDue(t, n.f, 10, []DueKeys{{Region: "r", Keys: []string{"a", "b"}}}) // by the group's clock, 9_000
	clk.set(9_100)
	checkDue(t, n.f, 10, []DueKeys{{Region: "r", Keys: []string{"a", "b", "big"}}})
}
