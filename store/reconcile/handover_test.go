package reconcile

import (
	"testing"

	"github.com/hashicorp/raft"
)

// TestHandOverTarget: leadership goes to the live voter that has applied
// the most of the group; never to this member, a non-voter, a member that
// did not answer (down, or stopping itself), one that does not host the
// group, or one already tried.
func TestHandOverTarget(t *testing.T) {
	conf := raft.Configuration{Servers: []raft.Server{
		{ID: "a", Suffrage: raft.Voter},
		{ID: "b", Suffrage: raft.Voter},
		{ID: "c", Suffrage: raft.Voter},
		{ID: "d", Suffrage: raft.Nonvoter},
		{ID: "e", Suffrage: raft.Voter},
	}}
	progress := Applied{
		"b": {1: 90, 2: 50},
		"c": {1: 100},
		"d": {1: 500, 2: 500},
		// e did not answer
	}
	for _, tc := range []struct {
		name  string
		gid   uint64
		tried []string
		want  string
	}{
		{"most applied", 1, nil, "c"},
		{"next after a failed try", 1, []string{"c"}, "b"},
		{"only b hosts group 2", 2, nil, "b"},
		{"none left", 1, []string{"b", "c"}, ""},
		{"group nobody reports", 3, nil, ""},
	} {
		got, ok := handOverTarget(conf, "a", tc.gid, progress, tc.tried)
		if string(got.ID) != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: target = %q (%v), want %q", tc.name, got.ID, ok, tc.want)
		}
	}
	// A tie goes to the smaller name, whatever the order.
	tie := Applied{"c": {1: 7}, "b": {1: 7}}
	if got, _ := handOverTarget(conf, "a", 1, tie, nil); got.ID != "b" {
		t.Errorf("tie: target = %q, want b", got.ID)
	}
}
