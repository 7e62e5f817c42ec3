package placement

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestNextControlStep(t *testing.T) {
	const dead = time.Hour
	alive := func(addr string) Member {
		return Member{Status: Alive, Since: t0.Add(-time.Hour), InternalAddr: addr, Verified: true}
	}
	failed := func(ago time.Duration) Member { return Member{Status: Failed, Since: t0.Add(-ago), InternalAddr: "x"} }
	left := Member{Status: Left, Since: t0, InternalAddr: "x"}
	three := map[string]Member{"a": alive("10.0.0.1:7070"), "b": alive("10.0.0.2:7070"), "c": alive("10.0.0.3:7070")}
	with := func(base map[string]Member, extra map[string]Member) map[string]Member {
		out := map[string]Member{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		servers  []raft.Server
		members  map[string]Member
		started  time.Time
		caughtUp map[string]bool
		mem      map[raft.ServerID]time.Time
		want     ControlStep
		// wantSince: the members remembered as caught up afterwards.
		wantSince []string
	}{
		{name: "settled", servers: []raft.Server{voter("a"), voter("b"), voter("c")}, members: three},
		{name: "an alive member missing from Raft joins as a non-voter, first by name",
			servers: []raft.Server{voter("a")}, members: three,
			want: ControlStep{Step: Step{Kind: AddNonvoter, Server: "b", Address: "10.0.0.2:7070"}}},
		{name: "nor one that has not proved its identity (gossip alone admits no one)",
			servers: []raft.Server{voter("a")}, members: with(three, map[string]Member{"b": {Status: Alive, Since: t0.Add(-time.Hour), InternalAddr: "10.0.0.2:7070"}}),
			want: ControlStep{Step: Step{Kind: AddNonvoter, Server: "c", Address: "10.0.0.3:7070"}}},
		{name: "not a member without an internal address, nor a failed one",
			servers: []raft.Server{voter("a")}, members: map[string]Member{"a": alive("x"), "b": {Status: Alive}, "c": failed(time.Minute)}},
		{name: "a member that left goes at once",
			servers: []raft.Server{voter("a"), voter("b"), voter("c"), nonvoter("d")}, members: with(three, map[string]Member{"d": left}),
			want: ControlStep{Step: Step{Kind: Remove, Server: "d", Address: "old-d"}, Reason: "left the cluster"}},
		{name: "a failed member stays until the dead-member timeout",
			servers: []raft.Server{voter("a"), voter("b"), voter("c")}, members: with(three, map[string]Member{"c": failed(dead - time.Second)})},
		{name: "and goes after it",
			servers: []raft.Server{voter("a"), voter("b"), voter("c")}, members: with(three, map[string]Member{"c": failed(dead + time.Second)}),
			want: ControlStep{Step: Step{Kind: Remove, Server: "c", Address: "old-c"}, Reason: "failed for more than 1h0m0s"}},
		{name: "a member gossip never heard of stays for the timeout from this leader's start",
			servers: []raft.Server{voter("a"), voter("b"), voter("z")}, members: map[string]Member{"a": three["a"], "b": three["b"]}, started: t0.Add(-dead + time.Second)},
		{name: "and goes after it",
			servers: []raft.Server{voter("a"), voter("b"), voter("z")}, members: map[string]Member{"a": three["a"], "b": three["b"]}, started: t0.Add(-dead - time.Second),
			want: ControlStep{Step: Step{Kind: Remove, Server: "z", Address: "old-z"}, Reason: "unknown to gossip for more than 1h0m0s"}},
		{name: "the leader never removes itself",
			servers: []raft.Server{voter("a"), voter("b"), voter("c")}, members: with(three, map[string]Member{"a": left})},
		{name: "below the target, a caught-up non-voter is first remembered",
			servers: []raft.Server{voter("a"), nonvoter("b"), nonvoter("c")}, members: three, caughtUp: map[string]bool{"b": true, "c": true},
			wantSince: []string{"b", "c"}},
		{name: "then promoted, first by name, once caught up for PromoteAfter",
			servers: []raft.Server{voter("a"), nonvoter("b"), nonvoter("c")}, members: three, caughtUp: map[string]bool{"b": true, "c": true},
			mem:  map[raft.ServerID]time.Time{"b": t0.Add(-3 * time.Second), "c": t0.Add(-3 * time.Second)},
			want: ControlStep{Step: Step{Kind: Promote, Server: "b", Address: "old-b"}, Voters: 1, Target: 3}, wantSince: []string{"b", "c"}},
		{name: "a non-voter that falls behind is forgotten and the next one is promoted",
			servers: []raft.Server{voter("a"), nonvoter("b"), nonvoter("c")}, members: three, caughtUp: map[string]bool{"c": true},
			mem:  map[raft.ServerID]time.Time{"b": t0.Add(-3 * time.Second), "c": t0.Add(-3 * time.Second)},
			want: ControlStep{Step: Step{Kind: Promote, Server: "c", Address: "old-c"}, Voters: 1, Target: 3}, wantSince: []string{"c"}},
		{name: "a dead non-voter is not promoted",
			servers: []raft.Server{voter("a"), voter("b"), nonvoter("c")}, members: with(three, map[string]Member{"c": failed(time.Minute)}),
			caughtUp: map[string]bool{"c": true}, mem: map[raft.ServerID]time.Time{"c": t0.Add(-time.Hour)}, wantSince: []string{"c"}},
		{name: "voters become non-voters' memory no more",
			servers: []raft.Server{voter("a"), voter("b"), voter("c")}, members: three,
			mem: map[raft.ServerID]time.Time{"b": t0.Add(-time.Hour)}},
		{name: "four live members keep three voters: no promotion",
			servers: []raft.Server{voter("a"), voter("b"), voter("c"), nonvoter("d")}, members: with(three, map[string]Member{"d": alive("10.0.0.4:7070")}),
			caughtUp: map[string]bool{"d": true}, mem: map[raft.ServerID]time.Time{"d": t0.Add(-time.Hour)}, wantSince: []string{"d"}},
		{name: "five live members make five voters",
			servers:  []raft.Server{voter("a"), voter("b"), voter("c"), nonvoter("d"), nonvoter("e")},
			members:  with(three, map[string]Member{"d": alive("10.0.0.4:7070"), "e": alive("10.0.0.5:7070")}),
			caughtUp: map[string]bool{"d": true, "e": true}, mem: map[raft.ServerID]time.Time{"d": t0.Add(-time.Hour), "e": t0.Add(-time.Hour)},
			want: ControlStep{Step: Step{Kind: Promote, Server: "d", Address: "old-d"}, Voters: 3, Target: 5}, wantSince: []string{"d", "e"}},
		{name: "extra voters are demoted, the greatest name other than the leader first",
			servers: []raft.Server{voter("a"), voter("b"), voter("c"), voter("d"), nonvoter("e")},
			members: with(three, map[string]Member{"d": alive("x")}),
			want:    ControlStep{Step: Step{Kind: Demote, Server: "d"}, Voters: 4, Target: 3}},
		{name: "but not while a voter is dead",
			servers: []raft.Server{voter("a"), voter("b"), voter("c"), voter("d")},
			members: with(three, map[string]Member{"d": failed(time.Minute)})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := map[raft.ServerID]int{}
			v := ControlView{
				Self: "a", Conf: raft.Configuration{Servers: tc.servers}, Members: tc.members,
				CaughtUp: func(srv raft.Server) bool {
					asked[srv.ID]++
					return tc.caughtUp[string(srv.ID)]
				},
				Now: t0, Started: tc.started, DeadMemberTimeout: dead, PromoteAfter: 2 * time.Second,
			}
			if v.Started.IsZero() {
				v.Started = t0
			}
			mem := ControlMemory{NonvoterSince: map[raft.ServerID]time.Time{}}
			for k, s := range tc.mem {
				mem.NonvoterSince[k] = s
			}
			got := NextControlStep(v, &mem)
			if got != tc.want {
				t.Errorf("step = %+v (%v), want %+v (%v)", got, got.Kind, tc.want, tc.want.Kind)
			}
			if len(mem.NonvoterSince) != len(tc.wantSince) {
				t.Errorf("remembered as caught up: %v, want %v", mem.NonvoterSince, tc.wantSince)
			}
			for _, id := range tc.wantSince {
				if _, ok := mem.NonvoterSince[raft.ServerID(id)]; !ok {
					t.Errorf("%s not remembered as caught up: %v", id, mem.NonvoterSince)
				}
			}
			for id, n := range asked {
				if n > 1 {
					t.Errorf("asked %d times whether %s caught up", n, id)
				}
			}
		})
	}
}

// TestNextControlStepCatchUp: an alive non-voter that this leader has not
// seen caught up since it first saw it is removed after CatchUpTimeout,
// and the caller is told to keep it out (Refuse); one seen caught up once,
// or a failed one, is not.
func TestNextControlStepCatchUp(t *testing.T) {
	const timeout = time.Minute
	members := map[string]Member{
		"a": {Status: Alive, InternalAddr: "a:1", Verified: true},
		"b": {Status: Alive, InternalAddr: "b:1", Verified: true},
		"s": {Status: Alive, InternalAddr: "s:1", Verified: true},
	}
	conf := raft.Configuration{Servers: []raft.Server{voter("a"), voter("b"), nonvoter("s")}}
	caughtUp := map[raft.ServerID]bool{}
	view := func(now time.Time) ControlView {
		return ControlView{Self: "a", Conf: conf, Members: members, Now: now, Started: t0,
			DeadMemberTimeout: time.Hour, PromoteAfter: time.Second, CatchUpTimeout: timeout,
			CaughtUp: func(srv raft.Server) bool { return caughtUp[srv.ID] }}
	}
	var mem ControlMemory
	if got := NextControlStep(view(t0), &mem); got.Kind != None {
		t.Fatalf("at first sight: %+v, want none", got)
	}
	if got := NextControlStep(view(t0.Add(timeout)), &mem); got.Kind != None {
		t.Fatalf("at the timeout: %+v, want none", got)
	}
	got := NextControlStep(view(t0.Add(timeout+time.Second)), &mem)
	want := ControlStep{Step: Step{Kind: Remove, Server: "s", Address: "old-s"}, Reason: "joined as a non-voter but did not catch up within 1m0s", Refuse: true}
	if got != want {
		t.Fatalf("past the timeout: %+v, want %+v", got, want)
	}

	// Seen caught up once: never removed by the rule, even when it falls
	// behind later.
	mem = ControlMemory{}
	caughtUp["s"] = true
	if got := NextControlStep(view(t0), &mem); got.Kind != None {
		t.Fatalf("caught up: %+v, want none", got)
	}
	caughtUp["s"] = false
	if got := NextControlStep(view(t0.Add(time.Hour)), &mem); got.Kind != None {
		t.Fatalf("behind an hour after catching up once: %+v, want none", got)
	}

	// A failed non-voter is the dead-member timeout's business.
	mem = ControlMemory{}
	members["s"] = Member{Status: Failed, Since: t0, InternalAddr: "s:1", Verified: true}
	NextControlStep(view(t0), &mem)
	if got := NextControlStep(view(t0.Add(2*timeout)), &mem); got.Kind != None {
		t.Fatalf("failed: %+v, want none", got)
	}

	// Without a timeout the rule is off.
	mem = ControlMemory{}
	members["s"] = Member{Status: Alive, InternalAddr: "s:1", Verified: true}
	v := view(t0)
	v.CatchUpTimeout = 0
	NextControlStep(v, &mem)
	v.Now = t0.Add(time.Hour)
	if got := NextControlStep(v, &mem); got.Kind != None {
		t.Fatalf("no timeout: %+v, want none", got)
	}
}

func TestVoterTarget(t *testing.T) {
	for n, want := range map[int]int{0: 1, 1: 1, 2: 2, 3: 3, 4: 3, 5: 5, 9: 5} {
		if got := VoterTarget(n); got != want {
			t.Errorf("VoterTarget(%d) = %d, want %d", n, got, want)
		}
	}
}
