package metrics

import "github.com/prometheus/client_golang/prometheus"

// The reasons a watch's stream ends (kvnode_watch_disconnects_total's
// label), as package rest/watch reports them.
var watchReasons = []string{"slow", "shutdown", "region_destroyed", "client", "error"}

// Watch counts the change streams (GET /kv/v1/watch) this member serves.
// It implements package rest/watch's Observer.
type Watch struct {
	watchers    prometheus.Gauge
	sent        prometheus.Counter
	disconnects *prometheus.CounterVec
}

func newWatch() *Watch {
	w := &Watch{
		watchers: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "watchers",
			Help: "Change streams (GET /kv/v1/watch) open on this member.",
		}),
		sent: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "watch", Name: "events_sent_total",
			Help: "Change events (initial entries included) this member sent to watchers.",
		}),
		disconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "watch", Name: "disconnects_total",
			Help: "Change streams ended, by reason: slow (fell more than --watch-buffer events behind), shutdown (this member stopped), region_destroyed, client (went away or stopped reading), error.",
		}, []string{"reason"}),
	}
	for _, r := range watchReasons {
		w.disconnects.WithLabelValues(r) // every reason shows, at 0
	}
	return w
}

func (w *Watch) register(reg *prometheus.Registry) {
	reg.MustRegister(w.watchers, w.sent, w.disconnects)
}

// WatchOpened counts a stream that began.
func (w *Watch) WatchOpened() { w.watchers.Inc() }

// WatchClosed counts a stream that ended, and why.
func (w *Watch) WatchClosed(reason string) {
	w.watchers.Dec()
	w.disconnects.WithLabelValues(reason).Inc()
}

// EventsSent counts n events sent to a watcher.
func (w *Watch) EventsSent(n int) { w.sent.Add(float64(n)) }
