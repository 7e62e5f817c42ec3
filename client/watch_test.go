package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node"
)

// TestWatchAcrossMemberDeath: a watch whose member dies resumes on another
// member after its last token, and delivers every change once, in order.
func TestWatchAcrossMemberDeath(t *testing.T) {
	tc := startCluster(t, 3, nil)
	c := tc.c
	if err := c.CreateRegion(ctx(t), client.RegionInfo{Name: "w", Type: client.Replicate}); err != nil {
		t.Fatal(err)
	}
	r := c.Region("w")
	if err := r.Put(ctx(t), "before", map[string]int{"n": -1}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type got struct {
		ev  client.Event
		err error
	}
	events := make(chan got, 1000)
	go func() {
		defer close(events)
		for ev, err := range c.Watch(wctx, client.WatchOptions{Region: "w", Initial: true}) {
			events <- got{ev, err}
		}
	}()
	next := func() client.Event {
		t.Helper()
		select {
		case g, ok := <-events:
			if !ok {
				t.Fatal("the watch ended")
			}
			if g.err != nil {
				t.Fatalf("watch: %v", g.err)
			}
			return g.ev
		case <-time.After(30 * time.Second):
			t.Fatal("no event for 30 s")
		}
		return client.Event{}
	}
	// The member serving the watch may not have applied the first put
	// yet: then it comes as a change after ready instead of as an initial
	// entry, never both, never neither.
	ev := next()
	sawBefore := ev.Type == client.EventInitial && ev.Key == "before" && ev.Token == ""
	if sawBefore {
		ev = next()
	}
	if ev.Type != client.EventReady || ev.Token == "" {
		t.Fatalf("event = %+v, want ready with a token", ev)
	}
	if !sawBefore {
		if ev := next(); ev.Type != client.EventCreate || ev.Key != "before" {
			t.Fatalf("event after ready = %+v, want the create of the entry that was not initial", ev)
		}
	}
	// Which member serves the watch: the last /kv/v1/watch the client sent.
	var watched string
	for _, ex := range tc.seen.take() {
		if strings.Contains(ex.url, "/kv/v1/watch") && ex.status == 200 {
			watched = ex.url[:strings.Index(ex.url, "/kv/v1/")]
		}
	}
	const n = 60
	for i := range n {
		if i == n/2 {
			for _, name := range tc.names {
				if tc.Nodes[name].RESTURL() == watched {
					tc.Stop(name, false) // a crash: no goodbye on the stream
				}
			}
		}
		key := fmt.Sprintf("k%02d", i)
		if err := r.Put(ctx(t), key, map[string]int{"n": i}); err != nil {
			t.Fatalf("Put(%s): %v", key, err)
		}
	}
	if len(tc.Nodes) != 2 {
		t.Fatalf("the watched member %q was not found among the members", watched)
	}
	last, prev := "", ""
	for i := 0; i < n; {
		ev := next()
		if ev.Type == client.EventUpdate && ev.Key == prev && ev.Token != last {
			// A put whose member died before it answered is sent again (a
			// put may be): applied twice, it is a create, then an update.
			last = ev.Token
			continue
		}
		want := fmt.Sprintf("k%02d", i)
		if ev.Type != client.EventCreate || ev.Key != want || ev.Token == "" || ev.Token == last {
			t.Fatalf("event %d = %+v, want create of %s with a new token", i, ev, want)
		}
		last, prev = ev.Token, ev.Key
		i++
	}
	select {
	case g := <-events:
		t.Fatalf("an event after the last change: %+v %v", g.ev, g.err)
	case <-time.After(500 * time.Millisecond):
	}
}

// TestWatchGone: a resume token older than the history the members keep
// ends the watch with ErrGone, never with events that skip changes.
func TestWatchGone(t *testing.T) {
	tc := startCluster(t, 3, func(_ string, cfg *node.Config) { cfg.Raft.WatchHistory = 16 })
	c := tc.c
	if err := c.CreateRegion(ctx(t), client.RegionInfo{Name: "g", Type: client.Replicate}); err != nil {
		t.Fatal(err)
	}
	r := c.Region("g")
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var token string
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = r.Put(ctx(t), "first", map[string]int{"n": 0})
	}()
	for ev, err := range c.Watch(wctx, client.WatchOptions{Region: "g"}) {
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		token = ev.Token
		break
	}
	for i := range 100 {
		if err := r.Put(ctx(t), fmt.Sprintf("k%d", i), map[string]int{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	var events int
	var last error
	for ev, err := range c.Watch(wctx, client.WatchOptions{Region: "g", From: token}) {
		if err != nil {
			last = err
			break
		}
		events++
		_ = ev
	}
	if !errors.Is(last, client.ErrGone) || events != 0 {
		t.Fatalf("resume from %q after 100 writes with a history of 16: %d events, then %v; want ErrGone at once", token, events, last)
	}
	// A watch of a region that does not exist is refused.
	for _, err := range c.Watch(wctx, client.WatchOptions{Region: "nope"}) {
		if !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("watch of a missing region = %v, want ErrNotFound", err)
		}
		break
	}
}

// TestWatchUndecodedOnCluster: a watch with Undecoded delivers each
// change as the member wrote it (its data holds the key and the value),
// with its token, and leaves Key and Value to the caller.
func TestWatchUndecodedOnCluster(t *testing.T) {
	tc := startCluster(t, 3, nil)
	c := tc.c
	if err := c.CreateRegion(ctx(t), client.RegionInfo{Name: "u", Type: client.Replicate}); err != nil {
		t.Fatal(err)
	}
	r := c.Region("u")
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	for ev, err := range c.Watch(wctx, client.WatchOptions{Region: "u", Undecoded: true}) {
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		if ev.Type == client.EventReady {
			for i := range 3 {
				if err := r.Put(ctx(t), fmt.Sprintf("k%d", i), map[string]int{"n": i}); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		if ev.Key != "" || ev.Value != nil || ev.Token == "" || !json.Valid(ev.Data) {
			t.Fatalf("undecoded event %+v: want no key or value, a token and the data as JSON", ev)
		}
		got = append(got, ev.Type+" "+string(ev.Data))
		if len(got) == 3 {
			break
		}
	}
	want := []string{
		`create {"type":"create","region":"u","key":"k0","value":{"n":0}}`,
		`create {"type":"create","region":"u","key":"k1","value":{"n":1}}`,
		`create {"type":"create","region":"u","key":"k2","value":{"n":2}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestListings: Keys and Values stream a region in key order.
func TestListings(t *testing.T) {
	tc := startCluster(t, 3, nil)
	c := tc.c
	if err := c.CreateRegion(ctx(t), client.RegionInfo{Name: "l", Type: client.Partition}); err != nil {
		t.Fatal(err)
	}
	r := c.Region("l")
	var batch []client.Entry
	for i := range 300 {
		batch = append(batch, client.Entry{Key: fmt.Sprintf("k%03d", i), Value: map[string]int{"n": i}})
	}
	if err := r.PutAll(ctx(t), batch); err != nil {
		t.Fatal(err)
	}
	i := 0
	for k, err := range r.Keys(ctx(t)) {
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("k%03d", i); k != want {
			t.Fatalf("key %d = %q, want %q", i, k, want)
		}
		i++
	}
	if i != 300 {
		t.Fatalf("Keys gave %d keys, want 300", i)
	}
	i = 0
	for v, err := range r.Values(ctx(t), 0) {
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`{"n":%d}`, i); string(v) != want {
			t.Fatalf("value %d = %s, want %s", i, v, want)
		}
		i++
	}
	if i != 300 {
		t.Fatalf("Values gave %d values, want 300", i)
	}
	i = 0
	for _, err := range r.Values(ctx(t), 7) {
		if err != nil {
			t.Fatal(err)
		}
		i++
	}
	if i != 7 {
		t.Fatalf("Values(limit 7) gave %d", i)
	}
	for _, err := range c.Region("nope").Keys(ctx(t)) {
		if !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("Keys of a missing region = %v, want ErrNotFound", err)
		}
	}
}
