package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
	"github.com/kvnode/kvnode/region"
)

// collect reads events from w until it has n or the deadline passes.
func collect(t *testing.T, w region.Watch, n int) []region.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []region.Event
	for len(out) < n {
		evs, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("after %d of %d events: %v", len(out), n, err)
		}
		out = append(out, evs...)
	}
	return out
}

// byKey renders events as key → "type value" lists: the order that is
// defined across partition groups is each key's.
func byKey(evs []region.Event) string {
	m := map[string][]string{}
	for _, e := range evs {
		m[e.Key] = append(m[e.Key], fmt.Sprintf("%s %s", e.Type, e.Value))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(m[k], ", "))
	}
	return b.String()
}

// TestWatchOnEveryMember: on a 3-member cluster whose partition groups
// have one replica each (so every member reads two of the three groups
// through another member), a watch of a partitioned region on every
// member gets the same initial entries and the same events, and a token
// taken on one member resumes on every other exactly after it. With one
// partition group, two of the members read the watch's only group (which
// Next reads itself, without a reader goroutine) through the third.
func TestWatchOnEveryMember(t *testing.T) {
	for _, groups := range []int{3, 1} {
		t.Run(fmt.Sprintf("%d groups", groups), func(t *testing.T) { watchOnEveryMember(t, groups) })
	}
}

func watchOnEveryMember(t *testing.T, groups int) {
	ip := nodetest.New(t)
	ip.Tune = func(_ string, cfg *node.Config) {
		cfg.PartitionGroups = groups
		cfg.ReplicationFactor = 1
	}
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}
	ip.Leader()
	members := []*node.Node{ip.Nodes["a"], ip.Nodes["b"], ip.Nodes["c"]}
	nodetest.MustCall(t, members[0], "POST", "/management/v1/regions", `{"name":"orders","type":"PARTITION"}`, 201)
	for i := 0; i < 12; i++ {
		nodetest.MustCall(t, members[i%3], "PUT", fmt.Sprintf("/kv/v1/orders/k%02d", i), fmt.Sprintf(`{"v":%d}`, i), 200)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	watches := make([]region.Watch, len(members))
	for i, m := range members {
		var initial []string
		w, err := node.Regions(m).Watch(ctx, "orders", region.WatchOptions{Initial: func(k string, v json.RawMessage) error {
			initial = append(initial, k+"="+string(v))
			return nil
		}})
		if err != nil {
			t.Fatalf("watch on %s: %v", m.Name(), err)
		}
		defer w.Close()
		sort.Strings(initial)
		if len(initial) != 12 || initial[0] != `k00={"v":0}` || initial[11] != `k11={"v":11}` {
			t.Fatalf("initial entries on %s = %q, want k00..k11", m.Name(), initial)
		}
		watches[i] = w
	}
	for i := 0; i < 12; i++ {
		nodetest.MustCall(t, members[i%3], "PUT", fmt.Sprintf("/kv/v1/orders/k%02d", i), fmt.Sprintf(`{"v":%d}`, 100+i), 200)
	}
	nodetest.MustCall(t, members[1], "DELETE", "/kv/v1/orders/k03,k07", "", 200)
	var first []region.Event
	for i, w := range watches {
		evs := collect(t, w, 14)
		if i == 0 {
			first = evs
			continue
		}
		if got, want := byKey(evs), byKey(first); got != want {
			t.Errorf("events on %s:\n%s\nwant (as on a):\n%s", members[i].Name(), got, want)
		}
	}
	// Resume from the 5th event seen on a, on every member.
	want := byKey(first[5:])
	for _, m := range members {
		w, err := node.Regions(m).Watch(ctx, "orders", region.WatchOptions{From: first[4].Token})
		if err != nil {
			t.Fatalf("resume on %s: %v", m.Name(), err)
		}
		got := byKey(collect(t, w, len(first)-5))
		w.Close()
		if got != want {
			t.Errorf("resumed on %s:\n%s\nwant:\n%s", m.Name(), got, want)
		}
	}
}

// TestWatchThroughFailover: a watcher on a follower keeps receiving every
// acknowledged write while the leader is killed and another is elected;
// when its own member is killed, resuming from its last token on another
// member gets exactly the events after it; and a restarted member, which
// rebuilt its history from its snapshot and log, resumes the same token
// the same way.
func TestWatchThroughFailover(t *testing.T) {
	ip := nodetest.New(t)
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}
	leader := ip.Leader()
	var follower, other *node.Node
	for _, n := range ip.Nodes {
		switch {
		case n == leader:
		case follower == nil:
			follower = n
		default:
			other = n
		}
	}
	for _, kind := range []string{"REPLICATE", "PARTITION"} {
		name := "f" + strings.ToLower(kind)
		nodetest.MustCall(t, follower, "POST", "/management/v1/regions", fmt.Sprintf(`{"name":%q,"type":%q}`, name, kind), 201)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	watches := map[string]region.Watch{}
	for _, name := range []string{"freplicate", "fpartition"} {
		w, err := node.Regions(follower).Watch(ctx, name, region.WatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		watches[name] = w
	}
	// put writes until acknowledged by one of the members given (a write
	// whose answer is lost may be applied: the test writes each key once
	// with a value of its own, so a retry is a harmless update).
	put := func(via []*node.Node, name, key, value string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; ; i++ {
			if r := nodetest.Call(t, via[i%len(via)], "PUT", "/kv/v1/"+name+"/"+key, value); r.Status == 200 {
				return
			} else if time.Now().After(deadline) {
				t.Fatalf("PUT %s/%s: %d %s", name, key, r.Status, r.Body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	acked := map[string][]string{}
	write := func(via []*node.Node, from, to int) {
		for i := from; i < to; i++ {
			for _, name := range []string{"freplicate", "fpartition"} {
				key, value := fmt.Sprintf("k%03d", i), fmt.Sprintf(`{"i":%d}`, i)
				put(via, name, key, value)
				acked[name] = append(acked[name], key+"="+value)
			}
		}
	}
	write([]*node.Node{follower, other}, 0, 20)
	ip.Stop(leader.Name(), false) // killed
	write([]*node.Node{follower, other}, 20, 40)
	last := map[string]string{}
	after := map[string][]string{} // what a watcher had not seen at last
	for name, w := range watches {
		evs := collect(t, w, 40)
		var got []string
		for _, e := range evs {
			got = append(got, e.Key+"="+string(e.Value))
		}
		if strings.Join(got, " ") != strings.Join(acked[name], " ") && name == "freplicate" {
			t.Errorf("%s: the watcher on %s saw %q, want every acknowledged write in order %q", name, follower.Name(), got, acked[name])
		}
		sort.Strings(got)
		want := append([]string(nil), acked[name]...)
		sort.Strings(want)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: the watcher saw %d events, want the %d acknowledged writes", name, len(got), len(want))
		}
		last[name] = evs[19].Token
		for _, e := range evs[20:] {
			after[name] = append(after[name], e.Key+"="+string(e.Value))
		}
	}
	// Resume on the surviving other member, then on the restarted one
	// (once gossip has seen the killed one fail: the restart comes back on
	// new ports, which gossip refuses for a name it still thinks alive).
	waitfor.Cond(t, 20*time.Second, "gossip to see "+leader.Name()+" fail", func() bool {
		for _, m := range nodetest.View(t, other).Members {
			if m.Name == leader.Name() {
				return m.Status != "alive"
			}
		}
		return false
	})
	restarted := ip.Start(leader.Name(), 3)
	waitfor.Cond(t, 20*time.Second, "the restarted member to be ready", func() bool {
		return nodetest.Call(t, restarted, "GET", "/readyz", "").Status == 200
	})
	for _, m := range []*node.Node{other, restarted} {
		for name, token := range last {
			w, err := node.Regions(m).Watch(ctx, name, region.WatchOptions{From: token})
			if err != nil {
				t.Fatalf("resume %s on %s: %v", name, m.Name(), err)
			}
			evs := collect(t, w, 20)
			w.Close()
			var got []string
			for _, e := range evs {
				got = append(got, e.Key+"="+string(e.Value))
			}
			sort.Strings(got)
			want := append([]string(nil), after[name]...)
			sort.Strings(want)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s resumed on %s: %q, want %q", name, m.Name(), got, want)
			}
		}
	}
}
