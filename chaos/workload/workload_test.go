package workload

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/kvnode/kvnode/chaos/model"
	"github.com/kvnode/kvnode/partition"
)

// TestFamiliesLandInOneGroup: on a partitioned region every family's keys
// are in one partition group (what the per-family model needs), families
// are spread over the groups, and oneGroup tells requests that span groups.
func TestFamiliesLandInOneGroup(t *testing.T) {
	w := &Clients{Partitioned: true, Groups: 3}
	fams := w.families()
	if len(fams) != 8 {
		t.Fatalf("%d families, want 8", len(fams))
	}
	for f, keys := range fams {
		if len(keys) != 2 {
			t.Errorf("family %d: %v, want 2 keys", f, keys)
		}
		for _, k := range keys {
			if got, want := partition.GroupForKey(k, 3), uint64(1+f%3); got != want {
				t.Errorf("key %s of family %d in group %d, want %d", k, f, got, want)
			}
			if model.FamilyOf(k) != model.FamilyOf(keys[0]) {
				t.Errorf("key %s not named after its family %s", k, model.FamilyOf(keys[0]))
			}
		}
	}
	if !w.oneGroup([]string{fams[0][0], fams[3][1]}) || w.oneGroup([]string{fams[0][0], fams[1][0]}) {
		t.Errorf("oneGroup: families 0 and 3 share group 1, families 0 and 1 do not")
	}
	r := &Clients{}
	if !r.oneGroup([]string{r.families()[0][0], r.families()[1][0]}) {
		t.Errorf("a replicated region is one group")
	}
}

// TestFamiliesWithMoves: when buckets move, a family's keys share a
// bucket (in the family's group at the start), and only requests within
// one bucket count as one Raft command.
func TestFamiliesWithMoves(t *testing.T) {
	w := &Clients{Partitioned: true, Groups: 3, Moves: true}
	fams := w.families()
	for f, keys := range fams {
		for _, k := range keys {
			if partition.Bucket(k) != partition.Bucket(keys[0]) || partition.GroupForKey(k, 3) != uint64(1+f%3) {
				t.Errorf("key %s of family %d: bucket %d (first key's %d), group %d", k, f, partition.Bucket(k), partition.Bucket(keys[0]), partition.GroupForKey(k, 3))
			}
		}
	}
	if !w.oneGroup(fams[0]) || w.oneGroup([]string{fams[0][0], fams[3][1]}) {
		t.Errorf("oneGroup with moves: a family is one bucket; families 0 and 3 share a group at the start, not a bucket")
	}
}

// TestMultiKeyInputs: multi-key requests name distinct keys with a value
// (and an expected value for CAS) each, at least two for a write.
func TestMultiKeyInputs(t *testing.T) {
	w := &Clients{Partitioned: true, Groups: 3, Values: &atomic.Int64{}, seen: map[string]int64{}}
	rng := rand.New(rand.NewPCG(1, 2))
	spans := 0
	for range 2000 {
		in := w.nextInput(rng)
		if !in.Kind.Multi() {
			continue
		}
		sorted := slices.Sorted(slices.Values(in.Keys))
		if len(slices.Compact(sorted)) != len(in.Keys) || (in.Kind != model.Query && len(in.Keys) < 2) {
			t.Fatalf("%v: keys %v", in.Kind, in.Keys)
		}
		switch in.Kind {
		case model.MultiPut, model.MultiReplace, model.MultiCAS:
			if len(in.Values) != len(in.Keys) || (in.Kind == model.MultiCAS) != (len(in.Olds) == len(in.Keys)) {
				t.Fatalf("%v: %d keys, values %v, olds %v", in.Kind, len(in.Keys), in.Values, in.Olds)
			}
		}
		if in.OneGroup != w.oneGroup(in.Keys) {
			t.Fatalf("%v on %v: OneGroup %v", in.Kind, in.Keys, in.OneGroup)
		}
		if !in.OneGroup {
			spans++
		}
	}
	if spans == 0 {
		t.Errorf("no request spanned groups")
	}
}

func TestParseAnswers(t *testing.T) {
	vals, err := parseMultiGet([]byte(`{"r":[{"v":3},null]}`), "r", 2)
	if err != nil || !slices.Equal(vals, []int64{3, model.Absent}) {
		t.Errorf("multi-get: %v, %v", vals, err)
	}
	if _, err := parseMultiGet([]byte(`{"r":[{"v":3}]}`), "r", 2); err == nil {
		t.Errorf("multi-get with a value missing: no error")
	}
	keys := []string{"a-1", "a-2", "a-3"}
	vals, err = parseQueryRows([]byte(`[{"k":"a-3","v":7},{"k":"a-1","v":5}]`), keys)
	if err != nil || !slices.Equal(vals, []int64{5, model.Absent, 7}) {
		t.Errorf("query rows: %v, %v", vals, err)
	}
	for _, bad := range []string{`[{"k":"b-1","v":1}]`, `[{"k":"a-1","v":1},{"k":"a-1","v":2}]`, `[{"k":"a-1"}]`, `{}`} {
		if _, err := parseQueryRows([]byte(bad), keys); err == nil {
			t.Errorf("query rows %s: no error", bad)
		}
	}
	if got, want := queryText("chaosp", []string{"a-1", "b-2"}), "SELECT e.key AS k, e.value.v AS v FROM /chaosp.entrySet e WHERE e.key IN SET('a-1', 'b-2')"; got != want {
		t.Errorf("query %q, want %q", got, want)
	}
}
