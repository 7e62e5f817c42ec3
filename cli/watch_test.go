package cli_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/kvnode/kvnode/cli"
)

// fakeMember answers GET /kv/v1/watch with the stream or error that
// answer writes, and records each request's Last-Event-ID and query.
type fakeMember struct {
	*httptest.Server
	mu      sync.Mutex
	lastIDs []string
	queries []string
}

func newFakeMember(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *fakeMember {
	t.Helper()
	m := &fakeMember{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/kv/v1/watch" {
			http.NotFound(w, r)
			return
		}
		m.mu.Lock()
		m.lastIDs = append(m.lastIDs, r.Header.Get("Last-Event-ID"))
		m.queries = append(m.queries, r.URL.RawQuery)
		m.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *fakeMember) requests() (lastIDs, queries []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.lastIDs...), append([]string(nil), m.queries...)
}

// stream writes SSE blocks, then holds the stream open until the client
// leaves when hold is set, else drops it.
func stream(blocks []string, hold bool) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		for _, b := range blocks {
			fmt.Fprint(w, b)
		}
		w.(http.Flusher).Flush()
		if hold {
			<-r.Context().Done()
		}
	}
}

func block(typ, id, data string) string {
	return "event: " + typ + "\nid: " + id + "\ndata: " + data + "\n\n"
}

var changes = []string{
	block("ready", "0:1.0", `{"type":"ready","region":"orders","token":"0:1.0"}`),
	block("create", "0:2.0", `{"type":"create","region":"orders","key":"1","value":{"total":5}}`),
	": keep-alive\r\nid: 0:2.0\r\n\r\n",
	block("update", "0:3.0", `{"type":"update","region":"orders","key":"1","value":{"total":7}}`),
	block("destroy", "0:4.0", `{"type":"destroy","region":"orders","key":"1"}`),
	block("clear", "0:5.0", `{"type":"clear","region":"orders"}`),
}

func TestWatchPrintsEvents(t *testing.T) {
	m := newFakeMember(t, stream(changes, true))
	env := []string{"KVNODE_URL=" + m.URL}
	r := kvnode(t, env, "", "watch", "orders", "--count", "4", "--prefix", "1")
	expect(t, r, 0, "create   1  {\"total\":5}\nupdate   1  {\"total\":7}\ndestroy  1  -\nclear    -  -\n")
	if !strings.Contains(r.err, "live from token 0:1.0") {
		t.Errorf("stderr %q, want the ready message", r.err)
	}
	r = kvnode(t, env, "", "watch", "orders", "--count", "1", "-o", "json")
	expect(t, r, 0, `{"type":"ready","region":"orders","token":"0:1.0"}`+"\n"+
		`{"type":"create","region":"orders","key":"1","value":{"total":5},"token":"0:2.0"}`+"\n")
	if _, qs := m.requests(); qs[0] != "prefix=1&region=orders" {
		t.Errorf("query %q, want prefix=1&region=orders", qs[0])
	}
	r = kvnode(t, env, "", "watch", "orders", "--timeout", "300ms")
	expect(t, r, 0, "create   1  {\"total\":5}\nupdate   1  {\"total\":7}\ndestroy  1  -\nclear    -  -\n")
	r = kvnode(t, env, "", "watch", "-q", "SELECT * FROM /orders o WHERE o.total > $1", "--bind", "int:5", "--initial", "--count", "1")
	if _, qs := m.requests(); r.code != 0 || qs[3] != "binds=%5B%7B%22%40type%22%3A%22int%22%2C%22%40value%22%3A%225%22%7D%5D&initial=true&q=SELECT+%2A+FROM+%2Forders+o+WHERE+o.total+%3E+%241" {
		t.Errorf("continuous query: exit %d, query %q", r.code, qs[3])
	}
}

// TestWatchResumes: a stream that drops resumes on the next member with
// Last-Event-ID the last id the first one sent (a keep-alive's), and
// nothing is printed twice; end stops the watch with exit code 0.
func TestWatchResumes(t *testing.T) {
	first := newFakeMember(t, stream(append(changes[:2:2],
		": keep-alive\nid: 0:2.5\n\n"), false))
	second := newFakeMember(t, stream([]string{
		block("update", "0:3.0", `{"type":"update","region":"orders","key":"1","value":{"total":7}}`),
		block("error", "0:3.0", `{"type":"error","cause":"too slow","token":"0:3.0"}`),
	}, false))
	third := newFakeMember(t, stream([]string{
		block("end", "0:3.0", `{"type":"end","cause":"region \"orders\" was destroyed"}`),
	}, false))
	env := []string{"KVNODE_URL=" + first.URL + "," + second.URL + "," + third.URL}
	r := kvnode(t, env, "", "watch", "orders")
	expect(t, r, 0, "create   1  {\"total\":5}\nupdate   1  {\"total\":7}\n")
	if ids, _ := second.requests(); len(ids) != 1 || ids[0] != "0:2.5" {
		t.Errorf("second member got Last-Event-ID %q, want [0:2.5]", ids)
	}
	if ids, _ := third.requests(); len(ids) != 1 || ids[0] != "0:3.0" {
		t.Errorf("third member got Last-Event-ID %q, want [0:3.0]", ids)
	}
	if ids, _ := first.requests(); len(ids) != 1 || ids[0] != "" {
		t.Errorf("first member got Last-Event-ID %q, want one request without", ids)
	}
	for _, want := range []string{"too slow", `ended: region "orders" was destroyed`} {
		if !strings.Contains(r.err, want) {
			t.Errorf("stderr %q, want %q", r.err, want)
		}
	}
}

func TestWatchRefusals(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		code   int
		want   string
	}{
		{404, `{"cause":"region \"x\" not found"}`, cli.ExitNotFound, `region "x" not found`},
		{403, `{"cause":"needs DATA:READ:x"}`, cli.ExitDenied, "DATA:READ:x"},
		{401, `{"cause":"credentials needed"}`, cli.ExitDenied, "credentials needed"},
		{400, `{"cause":"bad token"}`, cli.ExitBadInput, "bad token"},
		{410, `{"cause":"token too old","oldestToken":"0:900.0"}`, cli.ExitGone, "the oldest token kept is 0:900.0"},
	} {
		m := newFakeMember(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tc.status)
			fmt.Fprint(w, tc.body)
		})
		r := kvnode(t, []string{"KVNODE_URL=" + m.URL}, "", "watch", "x", "--from", "0:1.0")
		if r.code != tc.code || !strings.Contains(r.err, tc.want) || r.out != "" {
			t.Errorf("%d: exit %d, stderr %q; want exit %d and %q", tc.status, r.code, r.err, tc.code, tc.want)
		}
		if ids, _ := m.requests(); len(ids) != 1 || ids[0] != "0:1.0" {
			t.Errorf("%d: Last-Event-ID %q, want one request with 0:1.0", tc.status, ids)
		}
	}
	for _, args := range [][]string{{"watch"}, {"watch", "x", "--keys", "a", "--prefix", "b"},
		{"watch", "x", "--initial", "--from", "t"}, {"watch", "x", "--bind", "int:1"}, {"watch", "x", "--count", "-1"}} {
		if r := kvnode(t, nil, "", args...); r.code != cli.ExitBadInput {
			t.Errorf("kvnode %s: exit %d, want %d", strings.Join(args, " "), r.code, cli.ExitBadInput)
		}
	}
}
