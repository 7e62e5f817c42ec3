package store

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/raftgroup"
)

// recorder counts what a group's observer is told.
type recorder struct {
	leaders, stored, applied, committed, snapshots, failed, restored atomic.Int64
	snapshotBytes                                                    atomic.Int64
}

func (r *recorder) LeaderChanged()            { r.leaders.Add(1) }
func (r *recorder) LogStored(time.Duration)   { r.stored.Add(1) }
func (r *recorder) Applied(time.Duration)     { r.applied.Add(1) }
func (r *recorder) Committed(d time.Duration) { r.committed.Add(1) }
func (r *recorder) SnapshotFailed()           { r.failed.Add(1) }
func (r *recorder) Restored()                 { r.restored.Add(1) }
func (r *recorder) SnapshotWritten(_ time.Duration, size int64) {
	r.snapshots.Add(1)
	r.snapshotBytes.Store(size)
}

// recorders are the observers of every group opened, by group.
type recorders struct {
	mu sync.Mutex
	m  map[uint64]*recorder
}

func (rs *recorders) observe(gid uint64) raftgroup.Observer {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m[gid] == nil {
		rs.m[gid] = &recorder{}
	}
	return rs.m[gid]
}

func (rs *recorders) get(gid uint64) *recorder {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.m[gid]
}

// TestGroupsReportToTheirObserver: with Config.Observe, every group opened
// gets its own observer, which hears of its leader, log writes, applies,
// commits (it leads), snapshots and, after a restart, the restore.
func TestGroupsReportToTheirObserver(t *testing.T) {
	rs := &recorders{m: map[uint64]*recorder{}}
	tc := newTestCluster(t, 1)
	tc.tune = func(c *Config) { c.Observe = rs.observe }
	n := tc.start("solo")
	waitfor.Cond(t, 20*time.Second, "the node to be ready", func() bool { return n.Ready(ctxT(t, time.Second)) == nil })
	if err := n.CreateRegion(ctxT(t, 10*time.Second), region.Info{Name: "r", Kind: region.Replicate}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := n.Put(ctxT(t, 10*time.Second), "r", []region.Entry{{Key: string(rune('a' + i)), Value: []byte(`{"v":1}`)}}, region.TTL{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range n.Status().Groups {
		if rs.get(g.ID) == nil {
			t.Errorf("group %d opened without its observer", g.ID)
		}
	}
	r := rs.get(ControlGroup)
	if r.leaders.Load() < 1 || r.stored.Load() < 1 || r.applied.Load() < 1 || r.committed.Load() < 10 {
		t.Errorf("control group: %d leaders, %d log writes, %d applies, %d commits; want at least 1, 1, 1 and the 10 puts",
			r.leaders.Load(), r.stored.Load(), r.applied.Load(), r.committed.Load())
	}
	if err := n.groups.control().Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if r.snapshots.Load() != 1 || r.snapshotBytes.Load() < int64(10*len(`{"v":1}`)) || r.failed.Load() != 0 {
		t.Errorf("after a snapshot: %d written, last %d bytes, %d failed; want 1, at least the values' bytes, 0",
			r.snapshots.Load(), r.snapshotBytes.Load(), r.failed.Load())
	}

	tc.crash("solo")
	tc.start("solo")
	if r.restored.Load() != 1 {
		t.Errorf("restart from a snapshot: %d restores observed, want 1", r.restored.Load())
	}
}
