package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Buckets counts the bucket moves this member drove as the control
// group's leader (package store/rebalance's Observer): how many ended and
// how, the bytes moved and how long each took.
type Buckets struct {
	moves    *prometheus.CounterVec
	bytes    prometheus.Counter
	duration prometheus.Histogram
}

func newBuckets() *Buckets {
	b := &Buckets{
		moves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "bucket_moves_total",
			Help: "Bucket moves between partition groups this member drove as the control group's leader, by outcome: moved, or abandoned (failed before the switch; the bucket stayed where it was).",
		}, []string{"outcome"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "bucket_move_bytes_total",
			Help: "Keys and values copied by the bucket moves this member drove.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "bucket_move_duration_seconds",
			Help:    "How long each bucket move this member drove took, from its record in the partition table to the new owner's.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 25, 60},
		}),
	}
	b.moves.WithLabelValues("moved")
	b.moves.WithLabelValues("abandoned")
	return b
}

func (b *Buckets) register(reg *prometheus.Registry) {
	reg.MustRegister(b.moves, b.bytes, b.duration)
}

// BucketMoved counts a move that ended: moved (err nil) or abandoned.
func (b *Buckets) BucketMoved(bytes int64, took time.Duration, err error) {
	if err != nil {
		b.moves.WithLabelValues("abandoned").Inc()
		return
	}
	b.moves.WithLabelValues("moved").Inc()
	b.bytes.Add(float64(bytes))
	b.duration.Observe(took.Seconds())
}
