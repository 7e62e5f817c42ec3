package metrics

import (
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// namespace starts the name of every metric of kvnode's own.
const namespace = "kvnode"

// Options says what a node's registry reports.
type Options struct {
	// Version is the node's version, in kvnode_build_info.
	Version string
	// Sources are read at scrape time; nil ones are left out.
	Sources Sources
	// Logger receives errors of a scrape; nil discards them.
	Logger *slog.Logger
}

// Registry is one node's metrics. Its methods are safe for concurrent use.
type Registry struct {
	reg *prometheus.Registry
	log *slog.Logger

	http      *HTTP
	raft      raftVecs
	queries   queryMetrics
	functions functionMetrics
	reload    reloadMetrics
	watch     *Watch
	buckets   *Buckets

	groupsMu sync.Mutex
	groups   map[uint64]*Group
}

// New builds a node's registry: its own instruments, the collectors of its
// Sources, and Go runtime and process metrics.
func New(o Options) *Registry {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Registry{
		reg:    prometheus.NewRegistry(),
		log:    o.Logger,
		groups: map[uint64]*Group{},
	}
	r.http = newHTTP()
	r.raft = newRaftVecs()
	r.queries = newQueryMetrics()
	r.functions = newFunctionMetrics()
	r.reload = newReloadMetrics()
	r.watch = newWatch()
	r.buckets = newBuckets()
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help:        "Always 1; the labels say which kvnode and Go built this node.",
		ConstLabels: prometheus.Labels{"version": o.Version, "goversion": runtime.Version()},
	})
	buildInfo.Set(1)
	r.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo,
		r.http.requests, r.http.duration, r.http.logins,
		newSourceCollector(o.Sources, r.log),
	)
	r.raft.register(r.reg)
	r.queries.register(r.reg)
	r.functions.register(r.reg)
	r.reload.register(r.reg)
	r.watch.register(r.reg)
	r.buckets.register(r.reg)
	return r
}

// Handler serves the registry in Prometheus' text exposition format. With
// compress, it gzips the answer for scrapers that accept it; without, it
// leaves that to the server around it.
func (r *Registry) Handler(compress bool) http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		ErrorLog:           slogErrors{r.log},
		ErrorHandling:      promhttp.ContinueOnError,
		DisableCompression: !compress,
		// Keep a slow collection from piling scrapes up.
		MaxRequestsInFlight: 4,
	})
}

// HTTP is the registry's HTTP instruments (the rest.Observer).
func (r *Registry) HTTP() *HTTP { return r.http }

// Watch is the registry's change-stream instruments (the rest/watch
// Observer).
func (r *Registry) Watch() *Watch { return r.watch }

// Buckets is the registry's bucket-move instruments (store/rebalance's
// Observer).
func (r *Registry) Buckets() *Buckets { return r.buckets }

// slogErrors is promhttp's error log, on the node's logger.
type slogErrors struct{ log *slog.Logger }

func (l slogErrors) Println(v ...any) {
	l.log.Warn("collecting metrics", "error", v)
}

// groupLabel is the value of the label group: the group's ID in decimal.
func groupLabel(id uint64) string { return strconv.FormatUint(id, 10) }
