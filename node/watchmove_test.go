package node_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
	"github.com/kvnode/kvnode/partition"
)

// watchEvent is one change event of a watch's stream.
type watchEvent struct {
	token string
	key   string
	seq   int
}

// watchFrom opens a watch of region on n from token (the start of the
// stream when empty) and reads until it has want events; it returns the
// ready event's token and the events.
func watchFrom(t *testing.T, n *node.Node, region, token string, want int) (string, []watchEvent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	u := n.RESTURL() + "/kv/v1/watch?region=" + region
	if token != "" {
		u += "&from=" + url.QueryEscape(token)
	}
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("watch from %q: %d", token, resp.StatusCode)
	}
	r := bufio.NewReader(resp.Body)
	var ready string
	var events []watchEvent
	for len(events) < want || ready == "" {
		fields := map[string]string{}
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("read the stream after %d of %d events: %v", len(events), want, err)
			}
			if line == "\n" {
				break
			}
			name, value, _ := strings.Cut(strings.TrimSuffix(line, "\n"), ": ")
			fields[name] = value
		}
		switch fields["event"] {
		case "ready":
			ready = fields["id"]
		case "create", "update":
			var data struct {
				Key   string `json:"key"`
				Value struct {
					Seq int `json:"seq"`
				} `json:"value"`
			}
			if err := json.Unmarshal([]byte(fields["data"]), &data); err != nil {
				t.Fatalf("event %q: %v", fields["data"], err)
			}
			events = append(events, watchEvent{token: fields["id"], key: data.Key, seq: data.Value.Seq})
		case "":
		default:
			t.Fatalf("unexpected event %q: %q", fields["event"], fields["data"])
		}
	}
	return ready, events
}

// inOrder checks that events hold, for every key, the writes first..last
// in the order they were made, each once.
func inOrder(t *testing.T, what string, events []watchEvent, keys []string, first, last int) {
	t.Helper()
	next := map[string]int{}
	for _, k := range keys {
		next[k] = first
	}
	bad := 0
	for i, e := range events {
		if e.seq != next[e.key] {
			if bad++; bad <= 5 {
				t.Errorf("%s: event %d is write %d of %s, want write %d (its writes must come once each, in order)", what, i, e.seq, e.key, next[e.key])
			}
			continue
		}
		next[e.key]++
	}
	for _, k := range keys {
		if next[k] != last+1 {
			t.Errorf("%s: %s's writes %d..%d delivered up to %d", what, k, first, last, next[k]-1)
		}
	}
}

// TestWatchKeepsKeyOrderAcrossMoves: a watch that lags behind on a
// bucket's old group, when the bucket has moved and been written in its
// new one, still delivers every key's writes in the order they were made,
// each once (the adopt's fence; fsm's DESIGN.md, "Buckets"), and so does a
// watch resumed from any of its tokens. The watch is resumed from before
// the writes: each old group has hundreds of events to read, each new one
// a few, so without the fence the new groups' events come first.
func TestWatchKeepsKeyOrderAcrossMoves(t *testing.T) {
	ip := nodetest.New(t)
	n := ip.Start("a", 1)
	ip.Leader()
	nodetest.MustCall(t, n, "POST", "/management/v1/regions", `{"name":"ord","type":"PARTITION"}`, 201)
	var keys []string // one of each bucket
	for i := 0; len(keys) < partition.Buckets; i++ {
		if k := fmt.Sprintf("k%d", i); partition.Bucket(k) == len(keys) {
			keys = append(keys, k)
		}
	}
	put := func(seq int) {
		vals := make([]string, len(keys))
		for i, k := range keys {
			vals[i] = fmt.Sprintf(`{"k":%q,"seq":%d}`, k, seq)
		}
		nodetest.MustCall(t, n, "PUT", "/kv/v1/ord/"+strings.Join(keys, ","), "["+strings.Join(vals, ",")+"]", 200)
	}
	start, _ := watchFrom(t, n, "ord", "", 0)
	const rounds = 30
	for seq := 1; seq <= rounds; seq++ {
		put(seq)
	}
	growAndWait(t, n, 8)
	if groups, owners := owners(t, n); groups != 8 || len(owners[8]) == 0 {
		t.Fatalf("after the rebalance: %d groups, owners %v; want 8 with buckets in group 8", groups, owners)
	}
	put(rounds + 1)

	_, events := watchFrom(t, n, "ord", start, len(keys)*(rounds+1))
	inOrder(t, "resumed from before the writes", events, keys, 1, rounds+1)
	// From a token in the middle: the rest, in order per key.
	mid := events[len(events)/2]
	_, rest := watchFrom(t, n, "ord", mid.token, len(events)-len(events)/2-1)
	seen := map[string]int{}
	for _, e := range events[:len(events)/2+1] {
		seen[e.key] = e.seq
	}
	for _, k := range keys {
		inOrder(t, "resumed from "+mid.token+", key "+k, filterKey(rest, k), []string{k}, seen[k]+1, rounds+1)
	}
}

func filterKey(events []watchEvent, key string) []watchEvent {
	var out []watchEvent
	for _, e := range events {
		if e.key == key {
			out = append(out, e)
		}
	}
	return out
}
