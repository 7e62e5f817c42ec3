package backup

import (
	"slices"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/store/catalog"
)

// controlWithTable is a control group's state holding table t.
func controlWithTable(t *testing.T, table partition.Table) *fsm.FSM {
	t.Helper()
	f := fsm.New(fsm.Options{})
	enc, err := partition.Encode(table)
	if err != nil {
		t.Fatal(err)
	}
	cmd := codec.Command{Op: codec.OpSetMeta, MetaKey: catalog.TableKey, MetaValue: enc}
	if res, ok := f.Apply(&raft.Log{Index: 5, Term: 2, Type: raft.LogCommand, Data: cmd.Encode(nil)}).(*codec.Result); !ok || res.Err != nil {
		t.Fatalf("set the table: %+v", res)
	}
	return f
}

// TestClaimTable: the member alone hosts the groups it holds, which stay
// bootstrapped; the others lose their members and their bootstrap, so the
// planner places them like new groups; the rewrite is a committed command
// one index later.
func TestClaimTable(t *testing.T) {
	table := partition.Table{RF: 3, Groups: []partition.Group{
		{ID: 1, Members: []string{"a", "b", "c"}, Bootstrapper: "a", Bootstrapped: true},
		{ID: 2, Members: []string{"b", "c", "d"}, Bootstrapper: "b", Bootstrapped: true},
		{ID: 3, Members: []string{"c", "a", "d"}, Bootstrapper: "c", Bootstrapped: true},
	}}
	for _, tc := range []struct {
		name     string
		held     []uint64
		wantLost []uint64
	}{
		{"holds every group", []uint64{0, 1, 2, 3}, nil},
		{"lost one", []uint64{0, 1, 3}, []uint64{2}},
		{"only the control group", []uint64{0}, []uint64{1, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := controlWithTable(t, table)
			got, lost, err := claimTable(f, 2, "a", tc.held)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(lost, tc.wantLost) {
				t.Errorf("lost %v, want %v", lost, tc.wantLost)
			}
			if f.AppliedIndex() != 6 {
				t.Errorf("applied index %d after the rewrite, want 6", f.AppliedIndex())
			}
			raw, _, _ := f.Meta(catalog.TableKey)
			stored, err := partition.Decode(raw)
			if err != nil || !stored.Equal(got) {
				t.Fatalf("stored table %+v (%v), returned %+v", stored, err, got)
			}
			if err := stored.Validate(); err != nil {
				t.Errorf("the rewritten table does not validate: %v", err)
			}
			for _, g := range stored.Groups {
				if slices.Contains(tc.held, g.ID) {
					if !slices.Equal(g.Members, []string{"a"}) || !g.Bootstrapped || g.Bootstrapper != "a" {
						t.Errorf("held group %+v: want a alone, bootstrapped", g)
					}
				} else if len(g.Members) != 0 || g.Bootstrapped {
					t.Errorf("lost group %+v: want no member, not bootstrapped", g)
				}
			}
			// The planner gives a lost group to the members there are.
			planned := partition.Plan(stored, []string{"a", "e", "f"})
			for _, g := range planned.Groups {
				if len(g.Members) != 3 {
					t.Errorf("planned group %+v: want 3 members", g)
				}
			}
		})
	}
}

// TestClaimTableWithoutTable: a cluster that never got a table keeps none.
func TestClaimTableWithoutTable(t *testing.T) {
	f := fsm.New(fsm.Options{})
	if _, lost, err := claimTable(f, 1, "a", []uint64{0}); err != nil || lost != nil || f.AppliedIndex() != 0 {
		t.Errorf("claimTable without a table = %v, %v; applied %d", lost, err, f.AppliedIndex())
	}
}
