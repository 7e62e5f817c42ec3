package rest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/region"
)

// observed is one request an Observer was told of.
type observed struct {
	route, method string
	status        int
}

// recordingObserver keeps what it is told.
type recordingObserver struct {
	mu        sync.Mutex
	requests  []observed
	bad       int
	throttled int
	// unknownCert counts certificates whose common name is no user.
	unknownCert int
}

func (o *recordingObserver) ObserveRequest(route, method string, status int, elapsed time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests = append(o.requests, observed{route, method, status})
}

func (o *recordingObserver) LoginFailed(reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch reason {
	case "throttled":
		o.throttled++
	case "bad_credentials":
		o.bad++
	case "unknown_certificate_user":
		o.unknownCert++
	}
}

func (o *recordingObserver) take() []observed {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.requests
	o.requests = nil
	return out
}

// metricsHandler stands for the node's registry.
var metricsHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte("# HELP kvnode_up Test.\n# TYPE kvnode_up gauge\nkvnode_up 1\n"))
})

// TestObserverSeesRouteTemplates: every routed request reaches the
// Observer under its route template, never the path the client sent (the
// key, the region); a request no route matches has an empty route, and
// /geode/v1 is counted as the /kv/v1 route it is.
func TestObserverSeesRouteTemplates(t *testing.T) {
	obs := &recordingObserver{}
	ts := serve(t, Config{Observer: obs}, newTestStore(t), nil)
	ts.mkRegion(t, "orders", region.Replicate, "123", `{"n":1}`)
	obs.take()
	ts.do(t, "GET", "/kv/v1/orders/123", "", "")
	ts.do(t, "PUT", "/kv/v1/orders/124", ctJSON, `{"n":2}`)
	ts.do(t, "GET", "/geode/v1/orders/123", "", "")
	ts.do(t, "GET", "/kv/v1/orders", "", "")
	ts.do(t, "GET", "/no/such/path", "", "")
	ts.do(t, "GET", "/metrics", "", "")
	want := []observed{
		{"/kv/v1/:region/:keys", "GET", 200},
		{"/kv/v1/:region/:keys", "PUT", 200},
		{"/kv/v1/:region/:keys", "GET", 200},
		{"/kv/v1/:region", "GET", 200},
		{"", "GET", 404},
		{"/metrics", "GET", 404}, // no Config.Metrics
	}
	got := obs.take()
	if !slices.Equal(got, want) {
		t.Errorf("observed %v, want %v", got, want)
	}
	for _, o := range got {
		if strings.Contains(o.route, "orders") || strings.Contains(o.route, "123") {
			t.Errorf("route %q names what the client sent", o.route)
		}
	}
}

// TestMetricsNeedClusterRead: with security on, GET /metrics is 401
// without credentials or with wrong ones (a failed login for the
// Observer, throttled past the limit), 403 for a user without
// CLUSTER:READ, and the metrics for one with it.
func TestMetricsNeedClusterRead(t *testing.T) {
	obs := &recordingObserver{}
	a := auth.New(securityFile(t))
	a.SetFailureLimit(2, time.Minute)
	srv := httptest.NewServer(validated(t, New(Config{Auth: a, Metrics: metricsHandler, Observer: obs}, nil, nil, nil).Handler()))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		user, password string
		want           int
	}{
		{"", "", 401},
		{"reader", "wrong", 401},
		{"ordersOnly", "o-pw", 403},
		{"reader", "reader-pw", 200},
		{"admin", "admin-pw", 200},
	} {
		ts := &testServer{base: srv.URL, user: c.user, password: c.password}
		r := ts.do(t, "GET", "/metrics", "", "")
		if r.status != c.want {
			t.Errorf("GET /metrics as %q = %d %s, want %d", c.user, r.status, r.body, c.want)
		}
		if c.want == 200 && (!strings.Contains(r.body, "kvnode_up 1") || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain")) {
			t.Errorf("GET /metrics as %q = %s %q, want the metrics", c.user, r.header.Get("Content-Type"), r.body)
		}
	}
	if obs.bad != 1 || obs.throttled != 0 {
		t.Errorf("failed logins observed: %d bad, %d throttled; want 1, 0", obs.bad, obs.throttled)
	}
	// A second failure reaches the limit; the next attempt is throttled.
	wrong := &testServer{base: srv.URL, user: "admin", password: "wrong"}
	if r := wrong.do(t, "GET", "/metrics", "", ""); r.status != 401 {
		t.Errorf("second wrong password: %d", r.status)
	}
	if r := wrong.do(t, "GET", "/metrics", "", ""); r.status != 429 {
		t.Errorf("third wrong password: %d, want 429", r.status)
	}
	if obs.bad != 2 || obs.throttled != 1 {
		t.Errorf("failed logins observed: %d bad, %d throttled; want 2, 1", obs.bad, obs.throttled)
	}
}
