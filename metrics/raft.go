package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// durationBuckets (seconds) span an fsync on a fast disk (~50 µs) to a
// commit that waited out an election (seconds).
var durationBuckets = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// snapshotBuckets (seconds) span a small group's snapshot to a large one's.
var snapshotBuckets = []float64{.001, .01, .1, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// raftVecs are the instruments of every Raft group, by label group.
type raftVecs struct {
	leaderChanges *prometheus.CounterVec
	commit        *prometheus.HistogramVec
	apply         *prometheus.HistogramVec
	logStore      *prometheus.HistogramVec
	snapshots     *prometheus.CounterVec
	snapDuration  *prometheus.HistogramVec
	snapSize      *prometheus.GaugeVec
	restores      *prometheus.CounterVec
}

func newRaftVecs() raftVecs {
	group := []string{"group"}
	return raftVecs{
		leaderChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "raft", Name: "leader_changes_total",
			Help: "Leaders this member saw the group elect (a member re-elected after a gap counts again).",
		}, group),
		commit: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "raft", Name: "commit_duration_seconds",
			Help:    "On the leader, the time from appending an entry to the log to its state machine applying it: replication, the quorum's fsync and the wait to be applied.",
			Buckets: durationBuckets,
		}, group),
		apply: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "raft", Name: "apply_duration_seconds",
			Help:    "Time the state machine took to apply one batch of committed entries.",
			Buckets: durationBuckets,
		}, group),
		logStore: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "raft", Name: "log_store_duration_seconds",
			Help:    "Time one write of entries to the Raft log took, append and fsync (the member's log file is shared by its groups, whose writes are synced together).",
			Buckets: durationBuckets,
		}, group),
		snapshots: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "raft", Name: "snapshots_total",
			Help: "Snapshots of the group's state taken or received on this member, by outcome (ok, error).",
		}, []string{"group", "outcome"}),
		snapDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "raft", Name: "snapshot_duration_seconds",
			Help:    "Time writing one snapshot to disk took, from its creation to its last fsync.",
			Buckets: snapshotBuckets,
		}, group),
		snapSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "raft", Name: "snapshot_size_bytes",
			Help: "Size of the group's latest snapshot written on this member.",
		}, group),
		restores: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "raft", Name: "snapshot_restores_total",
			Help: "Times the group's state machine on this member was replaced by a snapshot (at start, or one sent by the leader).",
		}, group),
	}
}

func (v raftVecs) register(reg *prometheus.Registry) {
	reg.MustRegister(v.leaderChanges, v.commit, v.apply, v.logStore, v.snapshots, v.snapDuration, v.snapSize, v.restores)
}

// Group is one Raft group's instruments, resolved once when the group
// opens; it implements store/raftgroup's Observer. Its methods run on
// raft's goroutines and cost an atomic update each.
type Group struct {
	leaderChanges prometheus.Counter
	commit        prometheus.Observer
	apply         prometheus.Observer
	logStore      prometheus.Observer
	snapOK        prometheus.Counter
	snapFailed    prometheus.Counter
	snapDuration  prometheus.Observer
	snapSize      prometheus.Gauge
	restores      prometheus.Counter
}

// Group returns the instruments of Raft group id (the same ones each time
// the group opens on this member).
func (r *Registry) Group(id uint64) *Group {
	r.groupsMu.Lock()
	defer r.groupsMu.Unlock()
	if g, ok := r.groups[id]; ok {
		return g
	}
	l := groupLabel(id)
	v := r.raft
	g := &Group{
		leaderChanges: v.leaderChanges.WithLabelValues(l),
		commit:        v.commit.WithLabelValues(l),
		apply:         v.apply.WithLabelValues(l),
		logStore:      v.logStore.WithLabelValues(l),
		snapOK:        v.snapshots.WithLabelValues(l, "ok"),
		snapFailed:    v.snapshots.WithLabelValues(l, "error"),
		snapDuration:  v.snapDuration.WithLabelValues(l),
		snapSize:      v.snapSize.WithLabelValues(l),
		restores:      v.restores.WithLabelValues(l),
	}
	r.groups[id] = g
	return g
}

// LeaderChanged counts a leader elected.
func (g *Group) LeaderChanged() { g.leaderChanges.Inc() }

// LogStored times one write of entries to the log.
func (g *Group) LogStored(d time.Duration) { g.logStore.Observe(d.Seconds()) }

// Applied times one batch applied by the state machine.
func (g *Group) Applied(d time.Duration) { g.apply.Observe(d.Seconds()) }

// Committed times one entry from the leader's append to its apply.
func (g *Group) Committed(d time.Duration) { g.commit.Observe(d.Seconds()) }

// SnapshotWritten counts a snapshot written in d, of size bytes.
func (g *Group) SnapshotWritten(d time.Duration, size int64) {
	g.snapOK.Inc()
	g.snapDuration.Observe(d.Seconds())
	g.snapSize.Set(float64(size))
}

// SnapshotFailed counts a snapshot that could not be taken or written.
func (g *Group) SnapshotFailed() { g.snapFailed.Inc() }

// Restored counts a restore of the state machine from a snapshot.
func (g *Group) Restored() { g.restores.Inc() }
