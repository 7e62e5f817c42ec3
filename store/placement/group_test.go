package placement

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func voter(id string) raft.Server {
	return raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress("old-" + id)}
}

func nonvoter(id string) raft.Server {
	return raft.Server{Suffrage: raft.Nonvoter, ID: raft.ServerID(id), Address: raft.ServerAddress("old-" + id)}
}

var t0 = time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)

func TestNextGroupStep(t *testing.T) {
	all := map[string]string{"a": "10.0.0.1:7070", "b": "10.0.0.2:7070", "c": "10.0.0.3:7070", "d": "10.0.0.4:7070"}
	without := func(names ...string) map[string]string {
		out := map[string]string{}
		for k, v := range all {
			out[k] = v
		}
		for _, n := range names {
			delete(out, n)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		self     string
		members  []string
		unboot   bool
		servers  []raft.Server
		alive    map[string]string
		caughtUp map[string]bool
		mem      Memory
		want     Step
		// wantSince: the members remembered as caught up afterwards.
		wantSince []string
	}{
		{name: "settled", self: "a", members: []string{"a", "b", "c"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c")}, alive: all},
		{name: "not bootstrapped: nothing", self: "a", members: []string{"a", "b", "d"}, unboot: true,
			servers: []raft.Server{voter("a"), voter("b"), voter("c")}, alive: all},
		{name: "a member the table added joins as a non-voter at gossip's address", self: "a", members: []string{"a", "b", "d"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c")}, alive: all,
			want: Step{Kind: AddNonvoter, Server: "d", Address: "10.0.0.4:7070"}},
		{name: "an added member that is not alive is not added", self: "a", members: []string{"a", "b", "d", "c"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c")}, alive: without("d")},
		{name: "a caught-up non-voter is first remembered", self: "a", members: []string{"a", "b", "d"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c"), nonvoter("d")}, alive: all, caughtUp: map[string]bool{"d": true},
			wantSince: []string{"d"}},
		{name: "and not promoted before PromoteAfter", self: "a", members: []string{"a", "b", "d"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c"), nonvoter("d")}, alive: all, caughtUp: map[string]bool{"d": true},
			mem: Memory{NonvoterSince: map[raft.ServerID]time.Time{"d": t0.Add(-time.Second)}}, wantSince: []string{"d"}},
		{name: "then promoted and forgotten", self: "a", members: []string{"a", "b", "d"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c"), nonvoter("d")}, alive: all, caughtUp: map[string]bool{"d": true},
			mem:  Memory{NonvoterSince: map[raft.ServerID]time.Time{"d": t0.Add(-3 * time.Second)}},
			want: Step{Kind: Promote, Server: "d", Address: "old-d"}},
		{name: "a non-voter that falls behind is forgotten", self: "a", members: []string{"a", "b", "d"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c"), nonvoter("d")}, alive: all,
			mem: Memory{NonvoterSince: map[raft.ServerID]time.Time{"d": t0.Add(-3 * time.Second)}}},
		{name: "a non-voter the table does not want is never promoted, and removed", self: "a", members: []string{"a", "b", "c"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c"), nonvoter("d")}, alive: all, caughtUp: map[string]bool{"d": true},
			mem:  Memory{NonvoterSince: map[raft.ServerID]time.Time{"d": t0.Add(-time.Hour)}},
			want: Step{Kind: Remove, Server: "d", Address: "old-d"}},
		{name: "no removal while a wanted live member is not yet a voter", self: "a", members: []string{"a", "b", "d"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c"), nonvoter("d")}, alive: all},
		{name: "the dropped member is removed once every wanted live member votes", self: "a", members: []string{"a", "b", "d"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c"), voter("d")}, alive: all,
			want: Step{Kind: Remove, Server: "c", Address: "old-c"}},
		// Today's rule, kept by the move into this package: only live
		// wanted members hold a removal up, so c goes while its
		// replacement d is down (the group runs on two replicas until d
		// is back or the table re-plans).
		{name: "a dead wanted member does not hold the removal up", self: "a", members: []string{"a", "b", "d"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c")}, alive: without("d"),
			want: Step{Kind: Remove, Server: "c", Address: "old-c"}},
		{name: "a leader the table dropped hands over first, to a caught-up wanted voter", self: "c", members: []string{"a", "b", "d"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c"), voter("d")}, alive: without("a"), caughtUp: map[string]bool{"b": true, "d": true},
			want: Step{Kind: Transfer, Server: "b", Address: "10.0.0.2:7070"}},
		{name: "and waits when none has caught up", self: "c", members: []string{"a", "b", "d"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c"), voter("d")}, alive: all},
		{name: "leadership goes to the preferred leader", self: "b", members: []string{"a", "b", "c"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c")}, alive: all, caughtUp: map[string]bool{"a": true},
			want: Step{Kind: Transfer, Server: "a", Address: "10.0.0.1:7070"}},
		{name: "only to the preferred one", self: "b", members: []string{"a", "b", "c"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c")}, alive: all, caughtUp: map[string]bool{"c": true}},
		{name: "not to a preferred leader that is dead", self: "b", members: []string{"a", "b", "c"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c")}, alive: without("a"), caughtUp: map[string]bool{"a": true}},
		{name: "at most one transfer per TransferEvery", self: "b", members: []string{"a", "b", "c"},
			servers: []raft.Server{voter("a"), voter("b"), voter("c")}, alive: all, caughtUp: map[string]bool{"a": true},
			mem: Memory{LastTransfer: t0.Add(-4 * time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := map[raft.ServerID]int{}
			v := GroupView{
				Self: tc.self, Members: tc.members, Bootstrapped: !tc.unboot,
				Conf:  raft.Configuration{Servers: tc.servers},
				Alive: tc.alive,
				CaughtUp: func(srv raft.Server) bool {
					asked[srv.ID]++
					return tc.caughtUp[string(srv.ID)]
				},
				Now: t0, PromoteAfter: 2 * time.Second, TransferEvery: 5 * time.Second,
			}
			mem := tc.mem
			got := NextGroupStep(v, &mem)
			if got != tc.want {
				t.Errorf("step = %+v (%v), want %+v (%v)", got, got.Kind, tc.want, tc.want.Kind)
			}
			var since []string
			for id := range mem.NonvoterSince {
				since = append(since, string(id))
			}
			if len(since) != len(tc.wantSince) || (len(since) == 1 && since[0] != tc.wantSince[0]) {
				t.Errorf("remembered as caught up: %v, want %v", since, tc.wantSince)
			}
			if got.Kind == Transfer && mem.LastTransfer != t0 {
				t.Errorf("a transfer was not remembered")
			}
			for id, n := range asked {
				if n > 1 {
					t.Errorf("asked %d times whether %s caught up (it may be an RPC)", n, id)
				}
				if srv := find(tc.servers, id); srv.Suffrage == raft.Voter && got.Kind != Transfer && tc.self == string(id) {
					t.Errorf("asked whether the leader itself caught up")
				}
			}
		})
	}
}

func find(servers []raft.Server, id raft.ServerID) raft.Server {
	for _, s := range servers {
		if s.ID == id {
			return s
		}
	}
	return raft.Server{}
}
