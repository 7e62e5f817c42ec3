package workload

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
)

// fakeLog is a region's changes as every fake member serves them: event
// i (from 1) is an update of key "f0-0" to {"v":i} with token "t<i>".
type fakeLog struct{ n int }

// fakeMember serves GET /kv/v1/watch the way the contract says, from
// the position after Last-Event-ID, and misbehaves as told: after sending
// up to event dropAt it drops the connection, or goes silent (silent), or
// sends an `error` event; gone answers 410 to every resume.
type fakeMember struct {
	log     *fakeLog
	dropAt  int
	silent  bool
	errorAt bool
	gone    bool

	mu     sync.Mutex
	resume []string // the Last-Event-ID of every request, "" when none
}

func (f *fakeMember) resumes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.resume...)
}

func (f *fakeMember) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/kv/v1/watch" || r.URL.Query().Get("region") != "r" || r.URL.Query().Get("prefix") != "f" {
		http.Error(w, `{"cause":"unexpected request `+r.URL.String()+`"}`, http.StatusBadRequest)
		return
	}
	from := r.Header.Get("Last-Event-ID")
	f.mu.Lock()
	f.resume = append(f.resume, from)
	f.mu.Unlock()
	pos := 0
	if from != "" {
		if f.gone {
			w.WriteHeader(http.StatusGone)
			fmt.Fprintf(w, `{"cause":"token %s is older than the history kept","oldestToken":"t%d"}`, from, f.log.n)
			return
		}
		pos, _ = strconv.Atoi(strings.TrimPrefix(from, "t"))
	} else if f.gone {
		pos = f.log.n // from the present
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	fmt.Fprintf(w, "event: ready\nid: t%d\ndata: {\"type\":\"ready\",\"region\":\"r\",\"token\":\"t%d\"}\n\n", pos, pos)
	for i := pos + 1; i <= f.log.n; i++ {
		if i > f.dropAt && f.dropAt > 0 {
			break
		}
		typ := "update"
		if i == 1 {
			typ = "create"
		}
		fmt.Fprintf(w, "event: %s\nid: t%d\ndata: {\"type\":%q,\"region\":\"r\",\"key\":\"f0-0\",\"value\":{\"v\":%d}}\n\n", typ, i, typ, i)
		// A keep-alive after each event, as after 15 s of quiet.
		fmt.Fprintf(w, ": keep-alive\nid: t%d\n\n", i)
		fl.Flush()
	}
	switch {
	case f.errorAt:
		fmt.Fprintf(w, "event: error\ndata: {\"type\":\"error\",\"cause\":\"slow consumer\",\"token\":\"t%d\"}\n\n", min(f.dropAt, f.log.n))
		return
	case f.silent || f.dropAt == 0:
		fl.Flush()
		<-r.Context().Done()
	}
	// Otherwise: the connection is dropped mid-stream.
}

// watchAll runs a Watcher over the members until it holds want events,
// then stops it.
func watchAll(t *testing.T, w *Watcher, want int) WatchResult {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitfor.Cond(t, 10*time.Second, fmt.Sprintf("%d events", want), func() bool { return len(w.Result().Events) >= want })
	return w.Result()
}

func newWatcher(members ...*fakeMember) (*Watcher, func()) {
	w := &Watcher{Region: "r", Prefix: "f", IdleTimeout: 300 * time.Millisecond}
	var servers []*httptest.Server
	for i, m := range members {
		s := httptest.NewServer(m)
		servers = append(servers, s)
		w.URLs = append(w.URLs, s.URL)
		w.Names = append(w.Names, fmt.Sprintf("n%d", i+1))
	}
	start := time.Now()
	w.Clock = func() int64 { return int64(time.Since(start)) }
	return w, func() {
		for _, s := range servers {
			s.CloseClientConnections()
			s.Close()
		}
	}
}

// checkStream: events 1..n, each once, in order, the first k from n1 on
// connection 0 and the rest from n2 on connection 1.
func checkStream(t *testing.T, res WatchResult, n, k int) {
	t.Helper()
	if len(res.Events) != n {
		t.Fatalf("got %d events, want %d: %+v", len(res.Events), n, res.Events)
	}
	for i, e := range res.Events {
		member, conn := "n1", 0
		if i >= k {
			member, conn = "n2", 1
		}
		if e.Value != int64(i+1) || e.Token != fmt.Sprintf("t%d", i+1) || e.Key != "f0-0" || e.Member != member || e.Conn != conn {
			t.Errorf("event %d: got %+v, want value %d, token t%d from %s on connection %d", i, e, i+1, i+1, member, conn)
		}
	}
	if len(res.Problems) > 0 {
		t.Errorf("problems: %q", res.Problems)
	}
}

// TestWatcherResumesElsewhere: a connection dropped mid-stream is
// resumed on the next member with Last-Event-ID = the last id received,
// and the stream comes out whole, each event once.
func TestWatcherResumesElsewhere(t *testing.T) {
	log := &fakeLog{n: 6}
	a, b := &fakeMember{log: log, dropAt: 3}, &fakeMember{log: log}
	w, closeAll := newWatcher(a, b)
	defer closeAll()
	res := watchAll(t, w, 6)
	checkStream(t, res, 6, 3)
	if got := b.resumes(); len(got) != 1 || got[0] != "t3" {
		t.Errorf("n2 was asked to resume after %q, want [t3]", got)
	}
	if res.Connections != 2 || res.Ends["closed"] != 1 {
		t.Errorf("connections %d, ends %v; want 2 and one closed", res.Connections, res.Ends)
	}
	select {
	case <-w.Ready():
	default:
		t.Errorf("Ready not closed after the ready event")
	}
}

// TestWatcherAbandonsSilentMember: a member that sends nothing for the
// idle timeout (paused, or cut off) is left for the next one.
func TestWatcherAbandonsSilentMember(t *testing.T) {
	log := &fakeLog{n: 5}
	a, b := &fakeMember{log: log, dropAt: 2, silent: true}, &fakeMember{log: log}
	w, closeAll := newWatcher(a, b)
	defer closeAll()
	res := watchAll(t, w, 5)
	checkStream(t, res, 5, 2)
	if got := b.resumes(); len(got) != 1 || got[0] != "t2" {
		t.Errorf("n2 was asked to resume after %q, want [t2]", got)
	}
	if res.Ends["timeout"] != 1 {
		t.Errorf("ends %v, want one timeout", res.Ends)
	}
}

// TestWatcherResumesAfterErrorEvent: an `error` event (a slow consumer)
// ends the stream; the watcher resumes from the event's token elsewhere.
func TestWatcherResumesAfterErrorEvent(t *testing.T) {
	log := &fakeLog{n: 4}
	a, b := &fakeMember{log: log, dropAt: 1, errorAt: true}, &fakeMember{log: log}
	w, closeAll := newWatcher(a, b)
	defer closeAll()
	res := watchAll(t, w, 4)
	checkStream(t, res, 4, 1)
	if got := b.resumes(); len(got) != 1 || got[0] != "t1" {
		t.Errorf("n2 was asked to resume after %q, want [t1]", got)
	}
	if res.Ends["error event: slow consumer"] != 1 {
		t.Errorf("ends %v, want one error event", res.Ends)
	}
}

// TestWatcherRecordsGone: a resume refused with 410 is recorded as Gone
// (the token asked, the oldest kept), and the watcher goes on from the
// present on the next member, without a token.
func TestWatcherRecordsGone(t *testing.T) {
	log := &fakeLog{n: 4}
	a, b, c := &fakeMember{log: log, dropAt: 2}, &fakeMember{log: log, gone: true}, &fakeMember{log: log, gone: true}
	w, closeAll := newWatcher(a, b, c)
	defer closeAll()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitfor.Cond(t, 10*time.Second, "a stream on n3 from the present", func() bool { return w.Result().Connections == 2 })
	res := w.Result()
	if len(res.Gone) != 1 || res.Gone[0].Token != "t2" || res.Gone[0].Oldest != "t4" || res.Gone[0].Member != "n2" {
		t.Errorf("gone %+v, want one: n2 refused t2, oldest t4", res.Gone)
	}
	if got := c.resumes(); len(got) != 1 || got[0] != "" {
		t.Errorf("n3 was asked to resume after %q, want one request without a token", got)
	}
	if len(res.Events) != 2 {
		t.Errorf("%d events, want the 2 before the gap", len(res.Events))
	}
}

// TestWatcherFirstMemberNeverAnswers: a member that accepts the
// connection and never answers (paused) is left after the connect
// timeout; the stream starts on the next.
func TestWatcherFirstMemberNeverAnswers(t *testing.T) {
	log := &fakeLog{n: 3}
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	b := &fakeMember{log: log}
	w, closeAll := newWatcher(b)
	defer closeAll()
	w.URLs = append([]string{hang.URL}, w.URLs...)
	w.Names = []string{"n0", "n1"}
	res := watchAll(t, w, 3)
	checkStream(t, res, 3, 3)
	if res.Ends["timeout"] != 1 || res.Connections != 1 {
		t.Errorf("ends %v, connections %d; want one timeout and one stream", res.Ends, res.Connections)
	}
}
