package metrics

import (
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Sources are what a scrape reads from the node. Each is called once per
// scrape and must be cheap: no scan of a region, no call to another
// member. Nil functions (and an empty DataDir) are left out.
type Sources struct {
	// Groups is every Raft group open on this member, with its regions.
	Groups func() []GroupState
	// Gossip is this member's gossip view and health.
	Gossip func() GossipState
	// DataDir is the node's data dir, whose file system's free space is
	// reported.
	DataDir string
}

// GroupState is one Raft group as this member sees it.
type GroupState struct {
	ID uint64
	// State is raft's: Follower, Candidate, Leader or Shutdown (in any
	// case).
	State        string
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	LastIndex    uint64
	Voters       int
	NonVoters    int
	// Regions are the regions' parts this member's replica holds.
	Regions []RegionSize
}

// RegionSize is a region's part held by this member's replica of a group.
type RegionSize struct {
	Region  string
	Entries int64
	// Bytes are the entries' keys and values.
	Bytes int64
}

// GossipState is gossip's view on this member.
type GossipState struct {
	// Members by status; memberlist's "suspect" members are still alive.
	Alive, Failed, Left int
	// Refused are the members gossip shows that failed to prove their
	// identity to this member (kept out of every Raft group).
	Refused int
	// HealthScore is memberlist's awareness of this member's own health:
	// 0 is healthy, more means its probes are missing their deadlines
	// (it is slow, overloaded or cut off).
	HealthScore int
}

// raftStates are the values of kvnode_raft_state's label state.
var raftStates = []string{"follower", "candidate", "leader", "shutdown"}

// sourceCollector reads Sources at scrape time.
type sourceCollector struct {
	src Sources
	log *slog.Logger

	state, term, commit, applied, last, voters, nonVoters *prometheus.Desc
	entries, bytes                                        *prometheus.Desc
	members, health, refused                              *prometheus.Desc
	diskFree, diskSize                                    *prometheus.Desc
}

func newSourceCollector(src Sources, log *slog.Logger) *sourceCollector {
	group := []string{"group"}
	d := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(namespace+"_"+name, help, labels, nil)
	}
	return &sourceCollector{
		src:       src,
		log:       log,
		state:     d("raft_state", "1 for the state the group's Raft is in on this member (follower, candidate, leader, shutdown), 0 for the others; shutdown is a group halted or closing.", []string{"group", "state"}),
		term:      d("raft_term", "The group's current Raft term on this member.", group),
		commit:    d("raft_commit_index", "The highest log index this member knows to be committed in the group.", group),
		applied:   d("raft_applied_index", "The highest log index the group's state machine has applied on this member.", group),
		last:      d("raft_last_log_index", "The last index in the group's log on this member.", group),
		voters:    d("raft_voters", "Voters in the group's latest Raft configuration, as this member knows it.", group),
		nonVoters: d("raft_nonvoters", "Non-voters in the group's latest Raft configuration, as this member knows it.", group),
		entries:   d("region_entries", "Entries of the region held by this member's replica of the group.", []string{"region", "group"}),
		bytes:     d("region_size_bytes", "Bytes of keys and values of the region held by this member's replica of the group.", []string{"region", "group"}),
		members:   d("gossip_members", "Members gossip knows, by status (alive, failed, left).", []string{"state"}),
		refused:   d("members_refused", "Members gossip shows that failed to prove their identity over the internal port to this member: they are kept out of every Raft group, /servers and function calls (GET /management/v1/cluster says why).", nil),
		health:    d("gossip_health_score", "memberlist's awareness of this member's health: 0 is healthy, higher means its gossip probes miss their deadlines.", nil),
		diskFree:  d("data_dir_free_bytes", "Bytes free for the node in the file system of its data dir.", nil),
		diskSize:  d("data_dir_filesystem_size_bytes", "Size of the file system of the node's data dir.", nil),
	}
}

func (c *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.state, c.term, c.commit, c.applied, c.last, c.voters, c.nonVoters,
		c.entries, c.bytes, c.members, c.health, c.refused, c.diskFree, c.diskSize} {
		ch <- d
	}
}

func (c *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if c.src.Groups != nil {
		for _, g := range c.src.Groups() {
			l := groupLabel(g.ID)
			state := strings.ToLower(g.State)
			for _, s := range raftStates {
				v := 0.0
				if s == state {
					v = 1
				}
				gauge(c.state, v, l, s)
			}
			gauge(c.term, float64(g.Term), l)
			gauge(c.commit, float64(g.CommitIndex), l)
			gauge(c.applied, float64(g.AppliedIndex), l)
			gauge(c.last, float64(g.LastIndex), l)
			gauge(c.voters, float64(g.Voters), l)
			gauge(c.nonVoters, float64(g.NonVoters), l)
			for _, r := range g.Regions {
				gauge(c.entries, float64(r.Entries), r.Region, l)
				gauge(c.bytes, float64(r.Bytes), r.Region, l)
			}
		}
	}
	if c.src.Gossip != nil {
		g := c.src.Gossip()
		gauge(c.members, float64(g.Alive), "alive")
		gauge(c.members, float64(g.Failed), "failed")
		gauge(c.members, float64(g.Left), "left")
		gauge(c.health, float64(g.HealthScore))
		gauge(c.refused, float64(g.Refused))
	}
	if c.src.DataDir != "" {
		free, size, err := diskSpace(c.src.DataDir)
		if err != nil {
			c.log.Debug("reading the data dir's free space", "dir", c.src.DataDir, "error", err)
			return
		}
		gauge(c.diskFree, float64(free))
		gauge(c.diskSize, float64(size))
	}
}
