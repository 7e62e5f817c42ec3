package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
)

// sseMember serves GET /kv/v1/watch from a log of n updates of key "k"
// (event i has token "t<i>"), from the position after Last-Event-ID: up
// to event upTo (all when 0), then a keep-alive with the next position's
// id when keepAlive, then nothing (it stays open, as a paused member
// does). A new event type "later" comes after event 1.
type sseMember struct {
	n, upTo   int
	keepAlive bool
	mu        sync.Mutex
	resumed   []string
}

func (f *sseMember) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	from := r.Header.Get("Last-Event-ID")
	f.mu.Lock()
	f.resumed = append(f.resumed, from)
	f.mu.Unlock()
	pos, _ := strconv.Atoi(strings.TrimPrefix(from, "t"))
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "event: ready\nid: t%d\ndata: {\"type\":\"ready\"}\n\n", pos)
	last := f.n
	if f.upTo > 0 {
		last = f.upTo
	}
	for i := pos + 1; i <= last; i++ {
		fmt.Fprintf(w, "event: update\nid: t%d\ndata: {\"type\":\"update\",\"key\":\"k\",\"value\":{\"v\":%d}}\n\n", i, i)
		if i == 1 {
			fmt.Fprintf(w, "event: later\nid: t%d\ndata: {\"type\":\"later\",\"key\":\"k\"}\n\n", i)
		}
	}
	if f.keepAlive {
		fmt.Fprintf(w, ": keep-alive\nid: t%d\n\n", last)
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// TestWatchIdleAndOnStream: a stream that goes silent (a paused member)
// is left after IdleTimeout and resumed on another member after the last
// position, a keep-alive's included; OnStream is told of each stream and
// why it ended; an event of an unknown type is delivered as it came.
func TestWatchIdleAndOnStream(t *testing.T) {
	silent := &sseMember{n: 5, upTo: 2, keepAlive: true}
	whole := &sseMember{n: 5}
	a, b := httptest.NewServer(silent), httptest.NewServer(whole)
	defer a.Close()
	defer b.Close()
	defer a.CloseClientConnections()
	defer b.CloseClientConnections()
	// The first endpoint first, then each request at the next one: a, then b.
	c, err := client.New(client.Config{Endpoints: []string{a.URL, b.URL}, DisableSingleHop: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var streams []client.WatchStream
	opts := client.WatchOptions{Region: "r", IdleTimeout: 300 * time.Millisecond, OnStream: func(s client.WatchStream) { streams = append(streams, s) }}
	var got []string
	for ev, err := range c.Watch(ctx, opts) {
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		got = append(got, ev.Type+":"+ev.Token)
		if ev.Token == "t5" {
			break
		}
	}
	want := []string{"ready:t0", "update:t1", "later:t1", "update:t2", "update:t3", "update:t4", "update:t5"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("events %q, want %q", got, want)
	}
	if len(streams) != 3 || streams[0].Member != a.URL || streams[0].Err != nil ||
		streams[1].Member != a.URL || !errors.Is(streams[1].Err, context.DeadlineExceeded) || streams[1].Last != "t2" ||
		streams[2].Member != b.URL || streams[2].After != "t2" || streams[2].Err != nil {
		t.Fatalf("streams %+v; want a started, a idle after t2, b resumed after t2", streams)
	}
	if len(whole.resumed) != 1 || whole.resumed[0] != "t2" {
		t.Fatalf("the second member was asked to resume after %q, want t2", whole.resumed)
	}
}

// TestWatchUndecoded: with Undecoded the changes come with their type,
// token and data only, as the member sent them; ready is decoded as ever,
// and a later type too.
func TestWatchUndecoded(t *testing.T) {
	srv := httptest.NewServer(&sseMember{n: 2})
	defer srv.Close()
	defer srv.CloseClientConnections()
	c, err := client.New(client.Config{Endpoints: []string{srv.URL}, DisableSingleHop: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []string
	for ev, err := range c.Watch(ctx, client.WatchOptions{Region: "r", Undecoded: true}) {
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		got = append(got, fmt.Sprintf("%s:%s key=%q value=%s data=%s", ev.Type, ev.Token, ev.Key, ev.Value, ev.Data))
		if ev.Token == "t2" {
			break
		}
	}
	want := []string{
		`ready:t0 key="" value= data={"type":"ready"}`,
		`update:t1 key="" value= data={"type":"update","key":"k","value":{"v":1}}`,
		`later:t1 key="k" value= data={"type":"later","key":"k"}`,
		`update:t2 key="" value= data={"type":"update","key":"k","value":{"v":2}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
