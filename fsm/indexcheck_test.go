package fsm

import (
	"slices"
	"testing"

	"github.com/kvnode/kvnode/index"
)

// indexItem is one index entry, for comparisons.
type indexItem struct {
	value index.Key
	key   string
}

func indexItems(x *index.Index) []indexItem {
	var out []indexItem
	x.Ascend(func(v index.Key, key string) bool {
		out = append(out, indexItem{v, key})
		return true
	})
	return out
}

// checkIndexes checks that every region of f keeps exactly the indexes
// defined for it and that each holds exactly what an index built from
// scratch on the region's current entries holds, entry by entry. Call it
// when no build is in flight (after WaitIndexes) and no write applies.
func checkIndexes(t *testing.T, f *FSM) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, r := range f.st.regions {
		defs := f.st.indexDefs[name]
		if r.indexes.Len() != len(defs) {
			t.Errorf("region %q keeps %d indexes, %d are defined", name, r.indexes.Len(), len(defs))
		}
		for _, d := range defs {
			x, ok := r.indexes.Index(d.Name)
			if !ok {
				t.Errorf("region %q: index %q is not installed", name, d.Name)
				continue
			}
			if !slices.Equal(x.Def().Path, d.Path) {
				t.Errorf("region %q: index %q is over %v, defined over %v", name, d.Name, x.Def().Path, d.Path)
				continue
			}
			want := index.New(d)
			r.entries.Ascend(func(e entry) bool {
				want.Add(e.key, e.value)
				return true
			})
			got, exp := indexItems(x), indexItems(want)
			if len(got) != len(exp) {
				t.Errorf("region %q: index %q holds %d entries, a fresh build %d", name, d.Name, len(got), len(exp))
			}
			for i := range min(len(got), len(exp)) {
				if got[i] != exp[i] {
					t.Errorf("region %q: index %q entry %d is %+v, a fresh build has %+v", name, d.Name, i, got[i], exp[i])
					break
				}
			}
		}
	}
}
