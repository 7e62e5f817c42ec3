package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// rowBuckets span a point query to the largest result --max-query-rows
// allows by default.
var rowBuckets = []float64{0, 1, 10, 100, 1000, 10_000, 100_000}

// queryMetrics time the OQL queries clients run on this member.
type queryMetrics struct {
	duration prometheus.Histogram
	rows     prometheus.Histogram
	errors   prometheus.Counter
}

func newQueryMetrics() queryMetrics {
	return queryMetrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "query", Name: "duration_seconds",
			Help:    "Time a client's OQL query (ad hoc or named) took to run on this member, partitions scattered and merged, failed ones included.",
			Buckets: latencyBuckets,
		}),
		rows: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "query", Name: "result_rows",
			Help:    "Rows in the result of each successful query.",
			Buckets: rowBuckets,
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "query", Name: "errors_total",
			Help: "Queries that failed while running (a syntax error is refused before and not counted).",
		}),
	}
}

func (q queryMetrics) register(reg *prometheus.Registry) {
	reg.MustRegister(q.duration, q.rows, q.errors)
}

// QueryDone records a query that ran for d and answered rows rows, or
// failed with err.
func (r *Registry) QueryDone(d time.Duration, rows int, err error) {
	r.queries.duration.Observe(d.Seconds())
	if err != nil {
		r.queries.errors.Inc()
		return
	}
	r.queries.rows.Observe(float64(rows))
}

// Outcomes of a function's execution (FunctionDone).
const (
	FunctionOK      = "ok"
	FunctionError   = "error"
	FunctionTimeout = "timeout"
)

// functionMetrics count and time the function executions clients ask this
// member for.
type functionMetrics struct {
	executions *prometheus.CounterVec
	duration   *prometheus.HistogramVec
}

func newFunctionMetrics() functionMetrics {
	return functionMetrics{
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "function", Name: "executions_total",
			Help: "Function executions clients asked this member for, by function id and outcome (ok, error, timeout); calls of unknown functions are not counted.",
		}, []string{"id", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "function", Name: "duration_seconds",
			Help:    "Time a function execution took on its targets, by function id.",
			Buckets: latencyBuckets,
		}, []string{"id"}),
	}
}

func (f functionMetrics) register(reg *prometheus.Registry) {
	reg.MustRegister(f.executions, f.duration)
}

// FunctionDone records an execution of function id that took d and ended
// with outcome (FunctionOK, FunctionError or FunctionTimeout).
func (r *Registry) FunctionDone(id, outcome string, d time.Duration) {
	r.functions.executions.WithLabelValues(id, outcome).Inc()
	r.functions.duration.WithLabelValues(id).Observe(d.Seconds())
}
