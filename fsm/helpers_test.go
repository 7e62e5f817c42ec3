package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	goldenfile "github.com/kvnode/kvnode/internal/golden"

	"github.com/hashicorp/raft"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// orderValue is a 219-byte order-like value, as the REST samples use (the
// same as in package codec's golden commands).
const orderValue = `{"@type":"Order","purchaseOrderNo":1121,"customerId":1012,"description":"Order for XYZ Corp",` +
	`"orderDate":"02/10/2024","email":"jelly@example.com","totalPrice":225.5,` +
	`"items":[{"itemNo":1,"quantity":5,"unitPrice":45.1}]}`

// node drives an FSM the way Raft does: encoded commands at increasing
// indexes.
type node struct {
	t     *testing.T
	f     *FSM
	index uint64
}

func newNode(t *testing.T) *node {
	t.Helper()
	return &node{t: t, f: New(Options{})}
}

// log wraps an encoded command as the next committed entry.
func (n *node) log(c codec.Command) *raft.Log {
	n.index++
	return &raft.Log{Index: n.index, Term: 1, Type: raft.LogCommand, Data: c.Encode(nil)}
}

// apply applies c and returns its Result.
func (n *node) apply(c codec.Command) *codec.Result {
	n.t.Helper()
	got := n.f.Apply(n.log(c))
	res, ok := got.(*codec.Result)
	if !ok || res == nil {
		n.t.Fatalf("Apply(%v) returned %T %v, want a non-nil *Result", c.Op, got, got)
	}
	return res
}

// must applies c and fails the test if it is refused.
func (n *node) must(c codec.Command) *codec.Result {
	n.t.Helper()
	res := n.apply(c)
	if res.Err != nil {
		n.t.Fatalf("%v on %q refused: %v", c.Op, c.Region, res.Err)
	}
	return res
}

func (n *node) create(name string, kind region.Kind) {
	n.t.Helper()
	n.must(codec.Command{Op: codec.OpCreateRegion, Region: name, Kind: kind})
}

// put stores key=value pairs given as "k", `{...}`, "k2", `{...}`.
func (n *node) put(name string, kv ...string) {
	n.t.Helper()
	n.must(codec.Command{Op: codec.OpPut, Region: name, Entries: entries(kv...)})
}

func entries(kv ...string) []region.Entry {
	out := make([]region.Entry, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, region.Entry{Key: kv[i], Value: json.RawMessage(kv[i+1])})
	}
	return out
}

// dump renders every region and entry of f in a stable, readable form:
//
//	orders(REPLICATE) a={"n":1} b={}
func dump(t *testing.T, f *FSM) string {
	t.Helper()
	var b strings.Builder
	for _, info := range f.Regions() {
		fmt.Fprintf(&b, "%s(%s)", info.Name, info.Kind)
		list, err := f.List(info.Name, 0, -1)
		if err != nil {
			t.Fatalf("List(%q): %v", info.Name, err)
		}
		for _, e := range list {
			fmt.Fprintf(&b, " %s=%s", e.Key, e.Value)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// persist captures f and streams the snapshot into memory.
func persist(t testing.TB, f *FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	defer snap.Release()
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatalf("Persist: %v", err)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("Persist left the sink closed=%v cancelled=%v, want closed only", sink.closed, sink.cancelled)
	}
	return sink.buf.Bytes()
}

// memSink is a raft.SnapshotSink in memory; failAfter > 0 makes writes
// fail once that many bytes were written.
type memSink struct {
	buf       bytes.Buffer
	failAfter int
	closed    bool
	cancelled bool
}

var errSinkFull = errors.New("sink full")

func (s *memSink) Write(p []byte) (int, error) {
	if s.failAfter > 0 && s.buf.Len()+len(p) > s.failAfter {
		return 0, errSinkFull
	}
	return s.buf.Write(p)
}
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

// readCloser records whether Restore closed its input.
type readCloser struct {
	*bytes.Reader
	closed bool
}

func (r *readCloser) Close() error { r.closed = true; return nil }

func restore(f *FSM, b []byte) error {
	return f.Restore(&readCloser{Reader: bytes.NewReader(b)})
}

// golden compares got with testdata/golden/name, or rewrites the file when
// the test runs with -update.
func golden(t *testing.T, name string, got []byte) { goldenfile.Check(t, name, got, *update) }

func readGolden(t *testing.T, name string) []byte { return goldenfile.Read(t, name) }
