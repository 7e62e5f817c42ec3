package catalog

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// memMeta is Meta in memory, with the control group's compare-and-set
// rules, and a hook that runs before every SetMeta (a racing member).
type memMeta struct {
	mu        sync.Mutex
	vals      map[string]Entry
	next      uint64
	beforeSet func(key string)
}

func newMem() *memMeta { return &memMeta{vals: map[string]Entry{}} }

func (m *memMeta) Meta(_ context.Context, _ region.Consistency, key string) ([]byte, uint64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.vals[key]
	return e.Value, e.Version, ok, nil
}

func (m *memMeta) MetaList(_ context.Context, _ region.Consistency, prefix string) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Entry
	for k, e := range m.vals {
		if strings.HasPrefix(k, prefix) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (m *memMeta) SetMeta(_ context.Context, key string, version uint64, value []byte) error {
	if h := m.beforeSet; h != nil {
		m.beforeSet = nil
		h(key)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.vals[key]
	switch {
	case version == 0 && ok:
		return region.ErrVersionConflict
	case version != 0 && !ok:
		return region.ErrKeyNotFound
	case version != 0 && cur.Version != version:
		return region.ErrVersionConflict
	}
	if value == nil {
		delete(m.vals, key)
		return nil
	}
	m.next++
	m.vals[key] = Entry{Key: key, Value: value, Version: m.next}
	return nil
}

func TestNamedQueries(t *testing.T) {
	ctx := context.Background()
	c := New(newMem())
	if err := c.CreateQuery(ctx, "q", "SELECT * FROM /orders"); err != nil {
		t.Fatal(err)
	}
	var ce *region.ConflictError
	if err := c.CreateQuery(ctx, "q", "SELECT * FROM /other"); !errors.As(err, &ce) || !errors.Is(err, region.ErrKeyExists) ||
		string(ce.Current) != `{"id":"q","oql":"SELECT * FROM /orders"}` {
		t.Fatalf("second create = %v, want a conflict carrying the stored query as {id, oql}", err)
	}
	if err := c.CreateQuery(ctx, "lt", "SELECT * FROM /o o WHERE o.a < 3"); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateQuery(ctx, "lt", "x"); !errors.As(err, &ce) || !strings.Contains(string(ce.Current), "o.a < 3") {
		t.Errorf("conflict on a query with '<' = %v, want the text unescaped", err)
	}
	for _, tc := range []struct{ id, text string }{{"", "SELECT 1"}, {"a,b", "SELECT 1"}, {"ok", ""}} {
		if err := c.CreateQuery(ctx, tc.id, tc.text); !errors.Is(err, region.ErrInvalid) {
			t.Errorf("create %q %q = %v, want ErrInvalid", tc.id, tc.text, err)
		}
	}
	if err := c.UpdateQuery(ctx, "q", "SELECT * FROM /new"); err != nil {
		t.Fatal(err)
	}
	if q, err := c.NamedQuery(ctx, region.Linearizable, "q"); err != nil || q.OQL != "SELECT * FROM /new" {
		t.Errorf("after update: %+v, %v", q, err)
	}
	if err := c.UpdateQuery(ctx, "nope", "SELECT 1"); !errors.Is(err, region.ErrKeyNotFound) {
		t.Errorf("update of an unknown id = %v, want ErrKeyNotFound", err)
	}
	list, err := c.Queries(ctx, region.Linearizable)
	if err != nil || len(list) != 2 || list[0].ID != "lt" || list[1].ID != "q" {
		t.Errorf("Queries = %+v, %v; want lt and q in id order", list, err)
	}
	if err := c.DeleteQuery(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NamedQuery(ctx, region.Linearizable, "q"); !errors.Is(err, region.ErrKeyNotFound) {
		t.Errorf("deleted query = %v, want ErrKeyNotFound", err)
	}
	if err := c.DeleteQuery(ctx, "q"); !errors.Is(err, region.ErrKeyNotFound) {
		t.Errorf("second delete = %v, want ErrKeyNotFound", err)
	}
}

// TestCreateQueryConflict: a named query deleted between the conflict and
// the read of its text is created, not answered with the bare version
// conflict (a 500). (It was store's test of the same code.)
func TestCreateQueryConflict(t *testing.T) {
	ctx := context.Background()
	m := newMem()
	c := New(m)
	if err := c.CreateQuery(ctx, "q", "SELECT * FROM /orders"); err != nil {
		t.Fatal(err)
	}
	c.conflictHook = func() {
		c.conflictHook = nil
		if err := c.DeleteQuery(ctx, "q"); err != nil {
			t.Errorf("delete the query in the window: %v", err)
		}
	}
	if err := c.CreateQuery(ctx, "q", "SELECT * FROM /other"); err != nil {
		t.Fatalf("create over a query deleted after the conflict = %v, want it created", err)
	}
	if got, err := c.NamedQuery(ctx, region.Linearizable, "q"); err != nil || got.OQL != "SELECT * FROM /other" {
		t.Fatalf("query q = %+v, %v; want the new text", got, err)
	}
}

// TestChangeRetriesALostRace: an update that loses its compare-and-set to
// another member's change retries against the newer version; one that
// finds the key deleted in between reports it missing.
func TestChangeRetriesALostRace(t *testing.T) {
	ctx := context.Background()
	m := newMem()
	c := New(m)
	if err := c.CreateQuery(ctx, "q", "SELECT 1 FROM /a"); err != nil {
		t.Fatal(err)
	}
	m.beforeSet = func(key string) {
		_ = m.SetMeta(ctx, key, m.vals[key].Version, []byte("SELECT 2 FROM /a")) // the other member wins
	}
	if err := c.UpdateQuery(ctx, "q", "SELECT 3 FROM /a"); err != nil {
		t.Fatalf("update that lost a race = %v, want it retried", err)
	}
	if q, _ := c.NamedQuery(ctx, region.Linearizable, "q"); q.OQL != "SELECT 3 FROM /a" {
		t.Errorf("after the retried update: %q, want ours, applied after the other's", q.OQL)
	}
	m.beforeSet = func(key string) { _ = m.SetMeta(ctx, key, m.vals[key].Version, nil) }
	if err := c.UpdateQuery(ctx, "q", "SELECT 4 FROM /a"); !errors.Is(err, region.ErrKeyNotFound) || !strings.Contains(err.Error(), `named query "q"`) {
		t.Errorf("update of a query deleted in between = %v, want ErrKeyNotFound naming it", err)
	}
}

func TestFunctions(t *testing.T) {
	ctx := context.Background()
	m := newMem()
	c := New(m)
	if created, err := c.PutFunction(ctx, "f", []byte(`{"id":"f","v":1}`)); err != nil || !created {
		t.Fatalf("first put = %v, %v; want created", created, err)
	}
	if created, err := c.PutFunction(ctx, "f", []byte(`{"id":"f","v":2}`)); err != nil || created {
		t.Fatalf("second put = %v, %v; want replaced", created, err)
	}
	// Deleted between the create's conflict and the replace: created.
	m.beforeSet = func(key string) { _ = m.SetMeta(ctx, key, m.vals[key].Version, nil) }
	if created, err := c.PutFunction(ctx, "f", []byte(`{"id":"f","v":3}`)); err != nil || !created {
		t.Fatalf("put over a definition deleted in between = %v, %v; want created", created, err)
	}
	if v, ok, err := c.Function(ctx, "f"); err != nil || !ok || string(v) != `{"id":"f","v":3}` {
		t.Errorf("Function(f) = %s, %v, %v", v, ok, err)
	}
	if _, err := c.PutFunction(ctx, "g", nil); !errors.Is(err, region.ErrInvalid) {
		t.Errorf("empty definition = %v, want ErrInvalid", err)
	}
	if _, err := c.PutFunction(ctx, "g", []byte(`{"id":"g"}`)); err != nil {
		t.Fatal(err)
	}
	all, err := c.Functions(ctx)
	if err != nil || len(all) != 2 || string(all["g"]) != `{"id":"g"}` {
		t.Errorf("Functions = %v, %v; want f and g by id", all, err)
	}
	if err := c.DeleteFunction(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteFunction(ctx, "g"); !errors.Is(err, region.ErrKeyNotFound) || !strings.Contains(err.Error(), `deployed function "g"`) {
		t.Errorf("second delete = %v, want ErrKeyNotFound naming the function", err)
	}
	// Queries and functions do not see each other's keys.
	if list, _ := c.Queries(ctx, region.Linearizable); len(list) != 0 {
		t.Errorf("Queries sees functions: %+v", list)
	}
}

// TestSetMetaKeepsTheStoresKeys: the catalog's writes cannot reach the
// partition table or index definitions, which others keep beside it in
// the same metadata.
func TestSetMetaKeepsTheStoresKeys(t *testing.T) {
	ctx := context.Background()
	mem := newMem()
	if err := mem.SetMeta(ctx, TableKey, 0, []byte(`{"groups":[]}`)); err != nil {
		t.Fatal(err)
	}
	c := New(mem)
	for _, key := range []string{TableKey, IndexKey("orders", "byId")} {
		_, before, _, err := c.meta.Meta(ctx, region.Linearizable, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.meta.SetMeta(ctx, key, before, []byte(`{}`)); !errors.Is(err, region.ErrInvalid) {
			t.Errorf("SetMeta(%q) = %v, want ErrInvalid", key, err)
		}
		if v, _, _, err := mem.Meta(ctx, region.Linearizable, key); err != nil || string(v) == `{}` {
			t.Errorf("after the refused SetMeta, %q = %s (%v)", key, v, err)
		}
	}
	if err := c.meta.SetMeta(ctx, QueryPrefix+"q", 0, []byte("SELECT 1 FROM /r")); err != nil {
		t.Fatalf("SetMeta of a catalog key: %v", err)
	}
	list, err := c.meta.MetaList(ctx, region.Linearizable, QueryPrefix)
	if err != nil || len(list) != 1 || list[0].Key != "query/q" || list[0].Version == 0 {
		t.Errorf("MetaList = %+v, %v; want query/q with its version", list, err)
	}
}
