package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// latencyBuckets (seconds) span a loopback read (~0.1 ms) to a request
// that waited out a deadline (10 s and more).
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// HTTP counts the REST API's requests by route template, method and
// status, times them by route and method, and counts refused logins. It
// implements package rest's Observer.
type HTTP struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	logins   *prometheus.CounterVec

	// series maps a route, method and status to its resolved instruments.
	// It is only read once published: a new key copies it under mu.
	series atomic.Pointer[map[httpKey]httpSeries]
	mu     sync.Mutex
}

type httpKey struct {
	route, method string
	code          int
}

type httpSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func newHTTP() *HTTP {
	h := &HTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_requests_total",
			Help: "REST requests answered, by route template (never the path a client sent), method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "http_request_duration_seconds",
			Help:    "Time from routing a REST request to its answer's end, by route template and method.",
			Buckets: latencyBuckets,
		}, []string{"route", "method"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "login_failures_total",
			Help: "Logins refused, by reason: bad_credentials (HTTP Basic: unknown user or wrong password), throttled (too many failures from the client's address) or unknown_certificate_user (a verified client certificate whose common name is no user).",
		}, []string{"reason"}),
	}
	for _, reason := range loginRefusals {
		h.logins.WithLabelValues(reason)
	}
	h.series.Store(&map[httpKey]httpSeries{})
	return h
}

// Unmatched is the route of a request that matched no route.
const Unmatched = "unmatched"

// ObserveRequest counts one answered request. route is the route template
// that served it ("/kv/v1/:region/:keys"), empty when none matched;
// methods HTTP does not define are counted as "other".
func (h *HTTP) ObserveRequest(route, method string, status int, elapsed time.Duration) {
	if route == "" {
		route = Unmatched
	}
	k := httpKey{route: route, method: normalMethod(method), code: status}
	s, ok := (*h.series.Load())[k]
	if !ok {
		s = h.add(k)
	}
	s.requests.Inc()
	s.duration.Observe(elapsed.Seconds())
}

// add resolves and publishes k's instruments.
func (h *HTTP) add(k httpKey) httpSeries {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := *h.series.Load()
	if s, ok := old[k]; ok {
		return s
	}
	s := httpSeries{
		requests: h.requests.WithLabelValues(k.route, k.method, strconv.Itoa(k.code)),
		duration: h.duration.WithLabelValues(k.route, k.method),
	}
	m := make(map[httpKey]httpSeries, len(old)+1)
	for key, v := range old {
		m[key] = v
	}
	m[k] = s
	h.series.Store(&m)
	return s
}

// normalMethod is method when HTTP defines it, else "other": a label
// value per made-up method would let clients grow the series without end.
func normalMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "other"
}

// loginRefusals are the reasons a login is refused (auth.Login's
// Refusal); each series exists from the start, so that a rate over them
// is defined before the first refusal.
var loginRefusals = []string{"bad_credentials", "throttled", "unknown_certificate_user"}

// LoginFailed counts a refused login, for reason: one of loginRefusals.
func (h *HTTP) LoginFailed(reason string) {
	h.logins.WithLabelValues(reason).Inc()
}
