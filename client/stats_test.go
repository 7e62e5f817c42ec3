package client_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
)

// fakeMember answers every request with the next status of its list (the
// last one from then on) and remembers each request's body.
type fakeMember struct {
	mu       sync.Mutex
	statuses []int
	bodies   []string
}

func (f *fakeMember) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, r.Method+" "+r.URL.Path+" "+string(body))
	status := f.statuses[0]
	if len(f.statuses) > 1 {
		f.statuses = f.statuses[1:]
	}
	f.mu.Unlock()
	w.WriteHeader(status)
	if status >= 300 {
		_, _ = w.Write([]byte(`{"cause":"no leader"}`))
	}
}

func (f *fakeMember) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.bodies...)
}

// TestRetryForNegative: a client with a negative RetryFor sends a put once
// and returns the 503; the default sends it again after the 503.
func TestRetryForNegative(t *testing.T) {
	for _, tc := range []struct {
		retryFor time.Duration
		wantErr  bool
		sent     int
	}{{-1, true, 1}, {0, false, 2}} {
		f := &fakeMember{statuses: []int{503, 200}}
		srv := httptest.NewServer(f)
		c, err := client.New(client.Config{Endpoints: []string{srv.URL}, RetryFor: tc.retryFor, DisableSingleHop: true})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Region("r").Put(ctx(t), "k", map[string]int{"a": 1})
		if tc.wantErr != (err != nil) || tc.wantErr && !errors.Is(err, client.ErrUnavailable) {
			t.Errorf("RetryFor %v: Put = %v", tc.retryFor, err)
		}
		if n := len(f.requests()); n != tc.sent {
			t.Errorf("RetryFor %v: %d requests sent, want %d", tc.retryFor, n, tc.sent)
		}
		if s := c.Stats(); s.Requests != int64(tc.sent) || s.Routed != 0 {
			t.Errorf("RetryFor %v: Stats = %+v", tc.retryFor, s)
		}
		_ = c.Close()
		srv.Close()
	}
}

// TestPutAllOfOne: PutAll of one entry sends the value as a put does, not
// a list of one value (which a one-key path would store as the value).
func TestPutAllOfOne(t *testing.T) {
	f := &fakeMember{statuses: []int{200}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c, err := client.New(client.Config{Endpoints: []string{srv.URL}, DisableSingleHop: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := c.Region("r")
	if err := r.PutAll(ctx(t), []client.Entry{{Key: "k", Value: map[string]int{"a": 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := r.PutAll(ctx(t), []client.Entry{{Key: "k", Value: map[string]int{"a": 1}}, {Key: "l", Value: []byte(`{"b":2}`)}}); err != nil {
		t.Fatal(err)
	}
	got := f.requests()
	want := []string{`PUT /kv/v1/r/k {"a":1}`, `PUT /kv/v1/r/k,l [{"a":1},{"b":2}]`}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("sent %q, want %q", got, want)
	}
}

// TestStatsForwarded: a request routed by the document to a member that
// answers Kvnode-Hops 1 counts as routed and forwarded.
func TestStatsForwarded(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/management/v1/routing" {
			_, _ = io.WriteString(w, `{"version":3,"hash":"fnv1a64","buckets":0,"owners":[],"groups":[{"group":0,"leader":"m1","url":"`+srv.URL+`"}],"partitionedRegions":[]}`)
			return
		}
		if r.Header.Get("Kvnode-Route") != "3" {
			t.Errorf("%s %s: Kvnode-Route %q, want 3", r.Method, r.URL, r.Header.Get("Kvnode-Route"))
		}
		w.Header().Set("Kvnode-Hops", "1")
	}))
	defer srv.Close()
	c, err := client.New(client.Config{Endpoints: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Routing(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.Region("r").Put(ctx(t), "k", map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	// The forwarded answer starts a read of the document in the
	// background: 2 requests or 3.
	if s := c.Stats(); s.Requests < 2 || s.Requests > 3 || s.Routed != 1 || s.Forwarded != 1 {
		t.Errorf("Stats = %+v; want 2 or 3 requests (the document, the put, the document again), 1 routed, 1 forwarded", s)
	}
}

// TestDisableCompression: the client accepts gzip unless told not to.
func TestDisableCompression(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		_, _ = io.WriteString(w, `{"a":1}`)
	}))
	defer srv.Close()
	for _, disable := range []bool{false, true} {
		c, err := client.New(client.Config{Endpoints: []string{srv.URL}, DisableSingleHop: true, DisableCompression: disable})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Region("r").Get(ctx(t), "k"); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
	}
	if len(got) != 2 || got[0] != "gzip" || got[1] != "" {
		t.Errorf("Accept-Encoding sent: %q, want gzip, then none", got)
	}
}
