package raftlog

import "github.com/hashicorp/raft"

// Applied says how far a group's state machine got with this log: restored
// from a snapshot at index From (0: none), it then applied the entries
// From+1 to Through that this log holds. Raft applies only committed
// entries, so those are committed; a member that restarts may apply them
// again from its own log before any leader is elected.
//
// hashicorp/raft keeps no commit index on disk: a restarted member applies
// nothing past its snapshot until a leader of the new term has committed an
// entry, and every member of a cluster that restarts together waits for
// that election before it starts its replay (docs/performance.md, "Restarts
// and COUNT": with a million entries in the log, the replay and the
// election were each about half of the restart). A mark is what lets the
// replay run during the election instead.
//
// Why the entries From+1..Through stay the committed ones as long as the
// log holds them: raft rewrites an entry only after deleting the suffix it
// conflicts with (DeleteRange, then StoreLogs), and a committed entry never
// conflicts with a later leader's log (Raft's Leader Completeness);
// a prefix is deleted only once a snapshot covers it. A deletion that
// reaches the end of the log and starts at or below Through lowers
// Through all the same (deleteRange), at once and again when the log is
// replayed, so a mark never covers an entry written after it. Entries at
// or below From may be anything (a follower that installed a leader's
// snapshot may keep older entries of a lost term): a restarted member uses
// a mark only when the snapshot it restored is at From or later.
type Applied struct {
	From, Through uint64
}

// NoteApplied records a, the group's newest Applied. It is written with
// the member's next commit of the log, without a write or fdatasync of
// its own: a crash loses at most the last few marks, and the entries they
// covered are then applied after the election, as before. A mark is
// written after the entries it covers (they were durable before they were
// applied), so a log replayed after a crash never holds a mark without
// its entries.
func (g *GroupLog) NoteApplied(a Applied) {
	c := &g.s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.marks == nil {
		c.marks = map[*GroupLog]Applied{}
	}
	c.marks[g] = a
}

// Applied is the group's newest mark that is durable in the log (the zero
// Applied when it has none).
func (g *GroupLog) Applied() Applied {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.applied
}

// Holds reports whether the log holds every entry from first to last, and
// lists, by index, those among them that change raft's configuration
// (raft.LogConfiguration and raft's deprecated peer entries): what a
// restarted member must know to tell raft where its state machine is
// before it has applied them (store/raftgroup's replay). It reads nothing
// from disk.
func (g *GroupLog) Holds(first, last uint64) (configs []uint64, ok bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if first == 0 || first > last || first < g.first || last > g.last {
		return nil, false
	}
	for i := first; ; i++ {
		l, found := g.locs[i]
		if !found {
			return nil, false
		}
		switch l.typ {
		case raft.LogConfiguration, raft.LogAddPeerDeprecated, raft.LogRemovePeerDeprecated:
			configs = append(configs, i)
		}
		if i == last {
			return configs, true
		}
	}
}

// takeMarksLocked returns the marks noted since the last commit as writes, to
// commit after batch's own. Holds c.mu.
func (c *committer) takeMarksLocked() []*write {
	if len(c.marks) == 0 {
		return nil
	}
	out := make([]*write, 0, len(c.marks))
	for g, a := range c.marks {
		out = append(out, &write{kind: kindApplied, g: g, min: a.From, max: a.Through})
	}
	clear(c.marks)
	return out
}
