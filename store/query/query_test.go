package query

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/catalog"
	"github.com/kvnode/kvnode/store/listing"
	"github.com/kvnode/kvnode/store/regions"
)

// memGroups is the store as the regions and the query engine see it,
// without Raft: one state machine per group, commands applied at once,
// every read already past its barrier. Groups listed in elsewhere have no
// replica here: their reads and partials go through the group RPCs, which
// it delivers in process to what Serve registered, as another member's
// store would.
type memGroups struct {
	mu        sync.Mutex
	fsms      []*fsm.FSM // [0] is the control group, then 1..P
	index     uint64
	elsewhere map[uint64]bool
	handlers  map[string]func(context.Context, func(region.Consistency) (*fsm.FSM, error), []byte) ([]byte, error)
	calls     map[string]int // group RPCs sent, by name
}

func newMemGroups(p int) *memGroups {
	m := &memGroups{
		fsms:      []*fsm.FSM{fsm.New(fsm.Options{})},
		elsewhere: map[uint64]bool{},
		handlers:  map[string]func(context.Context, func(region.Consistency) (*fsm.FSM, error), []byte) ([]byte, error){},
		calls:     map[string]int{},
	}
	for gid := uint64(1); gid <= uint64(p); gid++ {
		m.fsms = append(m.fsms, fsm.New(fsm.Options{Group: gid, KeyFilter: func(k string) bool { return partition.GroupForKey(k, p) == gid }}))
	}
	return m
}

func (m *memGroups) Apply(_ context.Context, gid uint64, cmd *codec.Command) (*codec.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.index++
	out := m.fsms[gid].Apply(&raft.Log{Index: m.index, Term: 1, Type: raft.LogCommand, Data: cmd.Encode(nil)})
	res, ok := out.(*codec.Result)
	if !ok {
		return nil, fmt.Errorf("group %d answered %T %v", gid, out, out)
	}
	return res, res.Err
}

func (m *memGroups) Control(context.Context, region.Consistency) (*fsm.FSM, error) {
	return m.fsms[0], nil
}
func (m *memGroups) ControlState() (*fsm.FSM, error)      { return m.fsms[0], nil }
func (m *memGroups) ControlBarrier(context.Context) error { return nil }
func (m *memGroups) Placement(context.Context) (partition.Table, error) {
	return partition.NewTable(len(m.fsms)-1, 1)
}
func (m *memGroups) Leads(uint64) bool { return true }

func (m *memGroups) Visit(_ context.Context, gid uint64, _ region.Consistency, _ string, local func(*fsm.FSM) error, remote func(string) error) error {
	if m.elsewhere[gid] {
		return remote("member-" + fmt.Sprint(gid))
	}
	return local(m.fsms[gid])
}

func (m *memGroups) LocalPart(_ context.Context, gid uint64, _ region.Consistency) (*fsm.FSM, error) {
	if m.elsewhere[gid] {
		return nil, fmt.Errorf("group %d is not hosted here: %w", gid, region.ErrNotLeader)
	}
	return m.fsms[gid], nil
}

func (m *memGroups) Call(ctx context.Context, _ string, gid uint64, name string, body []byte) ([]byte, error) {
	m.mu.Lock()
	h := m.handlers[name]
	m.calls[name]++
	m.mu.Unlock()
	if h == nil {
		return nil, fmt.Errorf("no group RPC %q", name)
	}
	return h(ctx, func(region.Consistency) (*fsm.FSM, error) { return m.fsms[gid], nil }, body)
}

func (m *memGroups) Serve(name, _ string, h func(context.Context, func(region.Consistency) (*fsm.FSM, error), []byte) ([]byte, error)) {
	m.handlers[name] = h
}

func (m *memGroups) OpenPart(context.Context, uint64, region.Consistency, string, uint64, region.ListOptions) (listing.Source, error) {
	return nil, errors.New("listings are not part of this fake")
}

func (m *memGroups) AwaitIndexes(context.Context, uint64) { m.SyncIndexes() }

// SyncIndexes installs the index definitions as the store does.
func (m *memGroups) SyncIndexes() {
	var entries []catalog.Entry
	for _, e := range m.fsms[0].MetaList(catalog.IndexPrefix) {
		entries = append(entries, catalog.Entry{Key: e.Key, Value: e.Value, Version: e.Version})
	}
	set := catalog.Indexes(entries)
	for _, f := range m.fsms {
		f.Indexes().Set(set.Version, set.Defs)
	}
}

func (m *memGroups) Meta(_ context.Context, _ region.Consistency, key string) ([]byte, uint64, bool, error) {
	v, version, ok := m.fsms[0].Meta(key)
	return v, version, ok, nil
}

func (m *memGroups) MetaList(_ context.Context, _ region.Consistency, prefix string) ([]catalog.Entry, error) {
	var out []catalog.Entry
	for _, e := range m.fsms[0].MetaList(prefix) {
		out = append(out, catalog.Entry{Key: e.Key, Value: e.Value, Version: e.Version})
	}
	return out, nil
}

func (m *memGroups) SetMeta(ctx context.Context, key string, version uint64, value []byte) error {
	_, err := m.Apply(ctx, 0, &codec.Command{Op: codec.OpSetMeta, MetaKey: key, MetaVersion: version, MetaValue: value})
	return err
}

// fixture is a member over memGroups with orders (partitioned, P groups)
// and customers (replicated).
type fixture struct {
	groups *memGroups
	api    *regions.API
	engine *Engine
}

func newFixture(t *testing.T, p int) *fixture {
	t.Helper()
	g := newMemGroups(p)
	api := regions.New(g, nil)
	fx := &fixture{groups: g, api: api, engine: New(g, api.Parts())}
	ctx := context.Background()
	for _, r := range []region.Info{{Name: "orders", Kind: region.Partition}, {Name: "cust", Kind: region.Replicate}} {
		if err := api.CreateRegion(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	var orders []region.Entry
	for i := range 40 {
		orders = append(orders, region.Entry{Key: fmt.Sprintf("o%02d", i), Value: []byte(fmt.Sprintf(`{"id":%d,"cust":%d,"total":%d}`, i, i%4, i*10))})
	}
	if err := api.Put(ctx, "orders", orders, region.TTL{}); err != nil {
		t.Fatal(err)
	}
	for c := range 4 {
		if err := api.Put(ctx, "cust", []region.Entry{{Key: fmt.Sprintf("c%d", c), Value: []byte(fmt.Sprintf(`{"cust":%d,"vip":%v}`, c, c == 1))}}, region.TTL{}); err != nil {
			t.Fatal(err)
		}
	}
	return fx
}

func (fx *fixture) run(t *testing.T, text string, params ...any) string {
	t.Helper()
	q, err := fx.engine.CompileQuery(text)
	if err != nil {
		t.Fatalf("compile %q: %v", text, err)
	}
	res, err := fx.engine.Query(context.Background(), region.Linearizable, q, params, oql.Options{MaxRows: 1000})
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	b, err := res.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestScatterGather: a query over a partitioned region runs as one partial
// per group and merges them (ORDER BY, LIMIT, aggregates, a join with a
// replicated region, bind values), the same whether a group's partial ran
// on a replica here or came back over the query RPC from a member that
// hosts the group.
func TestScatterGather(t *testing.T) {
	cases := []struct{ text, want string }{
		{"SELECT o.id FROM /orders o WHERE o.total >= 350 ORDER BY o.id", "[35,36,37,38,39]"},
		{"SELECT o.id, o.total FROM /orders o ORDER BY o.total DESC LIMIT 2", `[{"id":39,"total":390},{"id":38,"total":380}]`},
		{"SELECT COUNT(*) FROM /orders o WHERE o.cust = 2", "[10]"},
		{"SELECT SUM(o.total) FROM /orders o", "[7800]"},
		{"SELECT DISTINCT o.cust FROM /orders o ORDER BY o.cust", "[0,1,2,3]"},
		{"SELECT o.id FROM /orders o WHERE o.cust IN (SELECT c.cust FROM /cust c WHERE c.vip = true) AND o.id < 10 ORDER BY o.id", "[1,5,9]"},
	}
	for _, remote := range []bool{false, true} {
		fx := newFixture(t, 3)
		if remote {
			fx.groups.elsewhere[2] = true
		}
		for _, c := range cases {
			if got := fx.run(t, c.text); got != c.want {
				t.Errorf("remote=%v %q = %s, want %s", remote, c.text, got, c.want)
			}
		}
		if got := fx.run(t, "SELECT o.id FROM /orders o WHERE o.cust = $1 AND o.id < $2 ORDER BY o.id", 3, 20); got != "[3,7,11,15,19]" {
			t.Errorf("remote=%v bound query = %s", remote, got)
		}
		if calls := fx.groups.calls[queryRPC]; remote != (calls > 0) {
			t.Errorf("remote=%v: %d query RPCs sent", remote, calls)
		}
	}
}

// TestCompileQueryCaches: a text is parsed once; a syntax error is the
// parser's and is not cached.
func TestCompileQueryCaches(t *testing.T) {
	e := New(newMemGroups(1), nil)
	a, err := e.CompileQuery("SELECT * FROM /r")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := e.CompileQuery("SELECT * FROM /r"); a != b {
		t.Error("the same text compiled twice")
	}
	var se *oql.SyntaxError
	if _, err := e.CompileQuery("SELECT FROM"); !errors.As(err, &se) {
		t.Errorf("a syntax error = %v, want *oql.SyntaxError", err)
	}
	if len(e.queries.m) != 1 {
		t.Errorf("%d queries cached, want only the one that compiled", len(e.queries.m))
	}
}

// TestServePartialRefusesBadRequests: a partial request that does not
// decode, or whose bind values do not, is the sender's mistake (400), and
// reaches no replica.
func TestServePartialRefusesBadRequests(t *testing.T) {
	g := newMemGroups(1)
	e := New(g, nil)
	for _, body := range []string{`not json`, `{"text":"SELECT * FROM /r","params":[{"not":"a value"}]}`} {
		touched := false
		replica := func(region.Consistency) (*fsm.FSM, error) { touched = true; return g.fsms[1], nil }
		_, err := e.servePartial(context.Background(), replica, []byte(body))
		if !errors.Is(err, region.ErrInvalid) {
			t.Errorf("partial request %s: %v, want ErrInvalid", body, err)
		}
		if strings.HasPrefix(body, "not") && touched {
			t.Errorf("a request that does not decode reached the replica")
		}
	}
}
