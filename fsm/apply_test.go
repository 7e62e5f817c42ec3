package fsm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/codec/codectest"
	"github.com/kvnode/kvnode/region"
)

// fixture is the state every case of TestApply starts from.
func fixture(t *testing.T) *node {
	t.Helper()
	n := newNode(t)
	n.create("orders", region.Replicate)
	n.create("parts", region.Partition)
	n.put("orders", "a", `{"n":1}`, "b", `{"n":2,"tags":["x"]}`)
	n.put("parts", "x", `{}`)
	return n
}

const fixtureDump = "orders(REPLICATE) a={\"n\":1} b={\"n\":2,\"tags\":[\"x\"]}\nparts(PARTITION) x={}\n"

func TestApply(t *testing.T) {
	pair := func(k, old, new string) region.CASPair {
		return region.CASPair{Key: k, Old: []byte(old), New: []byte(new)}
	}
	for _, tc := range []struct {
		name    string
		cmd     codec.Command
		wantErr error  // sentinel; nil means success
		wantMsg string // substring of the error message
		// wantConflict, when set, is the *region.ConflictError expected.
		wantConflict *region.ConflictError
		wantKey      string
		// want is the state afterwards; "" means unchanged (fixtureDump).
		want string
	}{
		// create-region
		{name: "create replicate", cmd: codec.Command{Op: codec.OpCreateRegion, Region: "new", Kind: region.Replicate},
			want: "new(REPLICATE)\n" + fixtureDump},
		{name: "create partition", cmd: codec.Command{Op: codec.OpCreateRegion, Region: "zz", Kind: region.Partition},
			want: fixtureDump + "zz(PARTITION)\n"},
		{name: "create existing", cmd: codec.Command{Op: codec.OpCreateRegion, Region: "orders", Kind: region.Replicate},
			wantErr: region.ErrRegionExists, wantMsg: `region "orders"`},
		{name: "create existing as other kind", cmd: codec.Command{Op: codec.OpCreateRegion, Region: "parts", Kind: region.Replicate},
			wantErr: region.ErrRegionExists},
		{name: "create unknown kind", cmd: codec.Command{Op: codec.OpCreateRegion, Region: "new", Kind: "LOCAL"},
			wantErr: region.ErrInvalid, wantMsg: "LOCAL"},
		{name: "create empty name", cmd: codec.Command{Op: codec.OpCreateRegion, Kind: region.Replicate},
			wantErr: region.ErrInvalid},

		// destroy-region
		{name: "destroy", cmd: codec.Command{Op: codec.OpDestroyRegion, Region: "orders"},
			want: "parts(PARTITION) x={}\n"},
		{name: "destroy missing", cmd: codec.Command{Op: codec.OpDestroyRegion, Region: "nope"},
			wantErr: region.ErrRegionNotFound, wantMsg: `region "nope"`},

		// put
		{name: "put new", cmd: codec.Command{Op: codec.OpPut, Region: "orders", Entries: entries("c", `{"n":3}`)},
			want: "orders(REPLICATE) a={\"n\":1} b={\"n\":2,\"tags\":[\"x\"]} c={\"n\":3}\nparts(PARTITION) x={}\n"},
		{name: "put overwrites", cmd: codec.Command{Op: codec.OpPut, Region: "orders", Entries: entries("a", `{"n":10.0}`)},
			want: "orders(REPLICATE) a={\"n\":10.0} b={\"n\":2,\"tags\":[\"x\"]}\nparts(PARTITION) x={}\n"},
		{name: "put-all, later duplicate wins", cmd: codec.Command{Op: codec.OpPut, Region: "orders",
			Entries: entries("c", `{"v":1}`, "a", `{}`, "c", `{"v":2}`)},
			want: "orders(REPLICATE) a={} b={\"n\":2,\"tags\":[\"x\"]} c={\"v\":2}\nparts(PARTITION) x={}\n"},
		{name: "put into partition region", cmd: codec.Command{Op: codec.OpPut, Region: "parts", Entries: entries("y", `{}`)},
			want: "orders(REPLICATE) a={\"n\":1} b={\"n\":2,\"tags\":[\"x\"]}\nparts(PARTITION) x={} y={}\n"},
		{name: "put unknown region", cmd: codec.Command{Op: codec.OpPut, Region: "nope", Entries: entries("a", `{}`)},
			wantErr: region.ErrRegionNotFound},
		{name: "put no entries", cmd: codec.Command{Op: codec.OpPut, Region: "orders"}, wantErr: region.ErrInvalid},
		{name: "put empty key", cmd: codec.Command{Op: codec.OpPut, Region: "orders", Entries: entries("c", `{}`, "", `{}`)},
			wantErr: region.ErrInvalid, wantMsg: "entry 1"},
		{name: "put empty value", cmd: codec.Command{Op: codec.OpPut, Region: "orders", Entries: entries("c", ``)},
			wantErr: region.ErrInvalid},

		// put-if-absent
		{name: "put-if-absent new", cmd: codec.Command{Op: codec.OpPutIfAbsent, Region: "orders", Entries: entries("c", `{}`)},
			wantKey: "c", want: "orders(REPLICATE) a={\"n\":1} b={\"n\":2,\"tags\":[\"x\"]} c={}\nparts(PARTITION) x={}\n"},
		{name: "put-if-absent existing", cmd: codec.Command{Op: codec.OpPutIfAbsent, Region: "orders", Entries: entries("b", `{}`)},
			wantErr: region.ErrKeyExists, wantKey: "b",
			wantConflict: &region.ConflictError{Err: region.ErrKeyExists, Key: "b", Current: []byte(`{"n":2,"tags":["x"]}`)}},
		{name: "put-if-absent generated", cmd: codec.Command{Op: codec.OpPutIfAbsent, Region: "orders", Entries: entries("", `{"g":1}`)},
			wantKey: "1", want: "orders(REPLICATE) 1={\"g\":1} a={\"n\":1} b={\"n\":2,\"tags\":[\"x\"]}\nparts(PARTITION) x={}\n"},
		{name: "put-if-absent unknown region", cmd: codec.Command{Op: codec.OpPutIfAbsent, Region: "nope", Entries: entries("c", `{}`)},
			wantErr: region.ErrRegionNotFound},
		{name: "put-if-absent two entries", cmd: codec.Command{Op: codec.OpPutIfAbsent, Region: "orders", Entries: entries("c", `{}`, "d", `{}`)},
			wantErr: region.ErrInvalid},
		{name: "put-if-absent no entries", cmd: codec.Command{Op: codec.OpPutIfAbsent, Region: "orders"},
			wantErr: region.ErrInvalid},

		// replace
		{name: "replace one", cmd: codec.Command{Op: codec.OpReplace, Region: "orders", Entries: entries("a", `{"n":5}`)},
			want: "orders(REPLICATE) a={\"n\":5} b={\"n\":2,\"tags\":[\"x\"]}\nparts(PARTITION) x={}\n"},
		{name: "replace all", cmd: codec.Command{Op: codec.OpReplace, Region: "orders", Entries: entries("b", `{}`, "a", `{"z":0}`)},
			want: "orders(REPLICATE) a={\"z\":0} b={}\nparts(PARTITION) x={}\n"},
		{name: "replace with a missing key", cmd: codec.Command{Op: codec.OpReplace, Region: "orders",
			Entries: entries("a", `{"n":9}`, "zz", `{}`, "yy", `{}`)},
			wantErr: region.ErrKeyAbsent, wantMsg: `key "zz"`},
		{name: "replace unknown region", cmd: codec.Command{Op: codec.OpReplace, Region: "nope", Entries: entries("a", `{}`)},
			wantErr: region.ErrRegionNotFound},

		// cas
		{name: "cas equal with other member order", cmd: codec.Command{Op: codec.OpCAS, Region: "orders",
			Pairs: []region.CASPair{pair("b", `{"tags":["x"],"n":2}`, `{"n":3}`)}},
			want: "orders(REPLICATE) a={\"n\":1} b={\"n\":3}\nparts(PARTITION) x={}\n"},
		{name: "cas all pairs", cmd: codec.Command{Op: codec.OpCAS, Region: "orders",
			Pairs: []region.CASPair{pair("a", `{"n":1}`, `{}`), pair("b", `{"n":2,"tags":["x"]}`, `{"m":1}`)}},
			want: "orders(REPLICATE) a={} b={\"m\":1}\nparts(PARTITION) x={}\n"},
		{name: "cas mismatch", cmd: codec.Command{Op: codec.OpCAS, Region: "orders", Pairs: []region.CASPair{pair("a", `{"n":1.0}`, `{}`)}},
			wantErr:      region.ErrCASMismatch,
			wantConflict: &region.ConflictError{Err: region.ErrCASMismatch, Key: "a", Current: []byte(`{"n":1}`)}},
		{name: "cas second pair mismatches", cmd: codec.Command{Op: codec.OpCAS, Region: "orders",
			Pairs: []region.CASPair{pair("a", `{"n":1}`, `{}`), pair("b", `{"n":2}`, `{}`)}},
			wantErr:      region.ErrCASMismatch,
			wantConflict: &region.ConflictError{Err: region.ErrCASMismatch, Key: "b", Current: []byte(`{"n":2,"tags":["x"]}`)}},
		{name: "cas missing key reported before mismatch", cmd: codec.Command{Op: codec.OpCAS, Region: "orders",
			Pairs: []region.CASPair{pair("a", `{"n":7}`, `{}`), pair("zz", `{}`, `{}`)}},
			wantErr: region.ErrKeyAbsent, wantMsg: `key "zz"`},
		{name: "cas unknown region", cmd: codec.Command{Op: codec.OpCAS, Region: "nope", Pairs: []region.CASPair{pair("a", `{}`, `{}`)}},
			wantErr: region.ErrRegionNotFound},
		{name: "cas no pairs", cmd: codec.Command{Op: codec.OpCAS, Region: "orders"}, wantErr: region.ErrInvalid},
		{name: "cas empty new", cmd: codec.Command{Op: codec.OpCAS, Region: "orders", Pairs: []region.CASPair{pair("a", `{"n":1}`, ``)}},
			wantErr: region.ErrInvalid},

		// delete
		{name: "delete one", cmd: codec.Command{Op: codec.OpDelete, Region: "orders", Keys: []string{"a"}},
			want: "orders(REPLICATE) b={\"n\":2,\"tags\":[\"x\"]}\nparts(PARTITION) x={}\n"},
		{name: "delete all", cmd: codec.Command{Op: codec.OpDelete, Region: "orders", Keys: []string{"b", "a"}},
			want: "orders(REPLICATE)\nparts(PARTITION) x={}\n"},
		{name: "delete with a missing key", cmd: codec.Command{Op: codec.OpDelete, Region: "orders", Keys: []string{"a", "zz", "b"}},
			wantErr: region.ErrKeyNotFound, wantMsg: `key "zz"`},
		{name: "delete unknown region", cmd: codec.Command{Op: codec.OpDelete, Region: "nope", Keys: []string{"a"}},
			wantErr: region.ErrRegionNotFound},
		{name: "delete no keys", cmd: codec.Command{Op: codec.OpDelete, Region: "orders"}, wantErr: region.ErrInvalid},

		// delete-if
		{name: "delete-if matching", cmd: codec.Command{Op: codec.OpDeleteIf, Region: "orders", Entries: entries("a", `{"n":1}`)},
			want: "orders(REPLICATE) b={\"n\":2,\"tags\":[\"x\"]}\nparts(PARTITION) x={}\n"},
		{name: "delete-if all", cmd: codec.Command{Op: codec.OpDeleteIf, Region: "orders", Entries: entries("b", `{"n":2,"tags":["x"]}`, "a", `{"n":1}`)},
			want: "orders(REPLICATE)\nparts(PARTITION) x={}\n"},
		{name: "delete-if compares bytes, not JSON", cmd: codec.Command{Op: codec.OpDeleteIf, Region: "orders", Entries: entries("b", `{"tags":["x"],"n":2}`)},
			wantErr:      region.ErrCASMismatch,
			wantConflict: &region.ConflictError{Err: region.ErrCASMismatch, Key: "b", Current: []byte(`{"n":2,"tags":["x"]}`)}},
		{name: "delete-if second entry mismatches", cmd: codec.Command{Op: codec.OpDeleteIf, Region: "orders", Entries: entries("a", `{"n":1}`, "b", `{"n":2}`)},
			wantErr:      region.ErrCASMismatch,
			wantConflict: &region.ConflictError{Err: region.ErrCASMismatch, Key: "b", Current: []byte(`{"n":2,"tags":["x"]}`)}},
		{name: "delete-if missing key reported before mismatch", cmd: codec.Command{Op: codec.OpDeleteIf, Region: "orders", Entries: entries("a", `{"n":7}`, "zz", `{}`)},
			wantErr: region.ErrKeyNotFound, wantMsg: `key "zz"`},
		{name: "delete-if unknown region", cmd: codec.Command{Op: codec.OpDeleteIf, Region: "nope", Entries: entries("a", `{}`)},
			wantErr: region.ErrRegionNotFound},
		{name: "delete-if no entries", cmd: codec.Command{Op: codec.OpDeleteIf, Region: "orders"}, wantErr: region.ErrInvalid},
		{name: "delete-if empty key", cmd: codec.Command{Op: codec.OpDeleteIf, Region: "orders", Entries: entries("", `{}`)},
			wantErr: region.ErrInvalid, wantMsg: "entry 0"},
		{name: "delete-if empty expected value", cmd: codec.Command{Op: codec.OpDeleteIf, Region: "orders", Entries: entries("a", ``)},
			wantErr: region.ErrInvalid},

		// clear
		{name: "clear replicate", cmd: codec.Command{Op: codec.OpClear, Region: "orders"},
			want: "orders(REPLICATE)\nparts(PARTITION) x={}\n"},
		{name: "clear partition refused", cmd: codec.Command{Op: codec.OpClear, Region: "parts"},
			wantErr: region.ErrNotSupported, wantMsg: "clearing a partitioned region is not supported"},
		{name: "clear unknown region", cmd: codec.Command{Op: codec.OpClear, Region: "nope"}, wantErr: region.ErrRegionNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := fixture(t)
			res := n.apply(tc.cmd)
			if res.Key != tc.wantKey {
				t.Errorf("Result.Key = %q, want %q", res.Key, tc.wantKey)
			}
			switch {
			case tc.wantErr == nil && res.Err != nil:
				t.Errorf("Result.Err = %v, want nil", res.Err)
			case tc.wantErr != nil && !errors.Is(res.Err, tc.wantErr):
				t.Errorf("Result.Err = %v, want an error wrapping %q", res.Err, tc.wantErr)
			case tc.wantMsg != "" && !strings.Contains(res.Err.Error(), tc.wantMsg):
				t.Errorf("Result.Err = %q, want it to mention %s", res.Err, tc.wantMsg)
			}
			if tc.wantConflict != nil {
				var ce *region.ConflictError
				if !errors.As(res.Err, &ce) {
					t.Fatalf("Result.Err = %v, want a *region.ConflictError", res.Err)
				}
				if ce.Err != tc.wantConflict.Err || ce.Key != tc.wantConflict.Key || !bytes.Equal(ce.Current, tc.wantConflict.Current) {
					t.Errorf("conflict = {%v %q %s}, want {%v %q %s}", ce.Err, ce.Key, ce.Current,
						tc.wantConflict.Err, tc.wantConflict.Key, tc.wantConflict.Current)
				}
			}
			want := tc.want
			if want == "" {
				want = fixtureDump
			}
			if got := dump(t, n.f); got != want {
				t.Errorf("state after %s:\n%s\nwant:\n%s", tc.cmd.Op, got, want)
			}
			if got := n.f.AppliedIndex(); got != n.index {
				t.Errorf("AppliedIndex = %d, want %d (refusals count as applied)", got, n.index)
			}
		})
	}
}

func TestGeneratedKeysSkipExisting(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	n.create("s", region.Replicate)
	n.put("r", "1", `{}`, "2", `{}`, "4", `{}`)
	gen := func(name string) string {
		t.Helper()
		return n.must(codec.Command{Op: codec.OpPutIfAbsent, Region: name, Entries: entries("", `{"g":true}`)}).Key
	}
	// The counter is one per group: keys are unique across its regions.
	for i, want := range []struct{ region, key string }{{"r", "3"}, {"r", "5"}, {"s", "6"}, {"r", "7"}} {
		if got := gen(want.region); got != want.key {
			t.Errorf("generated key %d in %q = %q, want %q", i, want.region, got, want.key)
		}
	}
	if v, err := n.f.Get("r", 0, "3"); err != nil || string(v) != `{"g":true}` {
		t.Errorf("Get(r, 3) = %s, %v; want the generated entry", v, err)
	}
	// A refused generation does not consume a number.
	n.apply(codec.Command{Op: codec.OpPutIfAbsent, Region: "nope", Entries: entries("", `{}`)})
	if got := gen("s"); got != "8" {
		t.Errorf("after a refusal, generated key = %q, want %q", got, "8")
	}
}

func TestDestroyThenRecreateIsEmpty(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	n.put("r", "a", `{}`)
	n.must(codec.Command{Op: codec.OpDestroyRegion, Region: "r"})
	if _, ok := n.f.Region("r"); ok {
		t.Fatal("Region(r) found after destroy")
	}
	if _, err := n.f.Get("r", 0, "a"); !errors.Is(err, region.ErrRegionNotFound) {
		t.Errorf("Get after destroy: %v, want ErrRegionNotFound", err)
	}
	n.create("r", region.Partition)
	if c, err := n.f.Count("r", 0); err != nil || c != 0 {
		t.Errorf("Count of the recreated region = %d, %v; want 0, nil", c, err)
	}
	if info, _ := n.f.Region("r"); info.Kind != region.Partition {
		t.Errorf("recreated kind = %q, want %q", info.Kind, region.Partition)
	}
}

// TestStoredValuesAreExactBytes: values are kept byte for byte.
func TestStoredValuesAreExactBytes(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	v := `{"b":10.0,"a":9223372036854775807,"s":"\u00e9 é","e":1E+2}`
	n.put("r", "k", v)
	if got, err := n.f.Get("r", 0, "k"); err != nil || string(got) != v {
		t.Errorf("Get = %s, %v; want %s", got, err, v)
	}
}

func TestApplyNonCommandEntries(t *testing.T) {
	f := New(Options{})
	if got := f.Apply(&raft.Log{Index: 3, Type: raft.LogConfiguration, Data: []byte("opaque")}); got != nil {
		t.Errorf("Apply(LogConfiguration) = %v, want nil", got)
	}
	if got := f.AppliedIndex(); got != 3 {
		t.Errorf("AppliedIndex after a configuration entry = %d, want 3", got)
	}
	for _, typ := range []raft.LogType{raft.LogNoop, raft.LogBarrier} {
		if got := f.Apply(&raft.Log{Index: 9, Type: typ}); got != nil {
			t.Errorf("Apply(%v) = %v, want nil", typ, got)
		}
	}
	if got := f.AppliedIndex(); got != 3 {
		t.Errorf("AppliedIndex after no-op and barrier entries = %d, want 3 (raft never sends them)", got)
	}
}

// TestApplyHaltsOnUndecodableCommand: a committed entry that does not
// decode stops the state machine at that entry instead of panicking (which
// took the whole node down, and again at every replay): the entries before
// it are applied, nothing after it is, the error names the group and the
// entry, the waiting client is told the outcome is unknown, snapshots are
// refused and WaitApplied returns at once.
func TestApplyHaltsOnUndecodableCommand(t *testing.T) {
	for _, apply := range []struct {
		name string
		fn   func(*FSM, []*raft.Log) []interface{}
	}{
		{"Apply", func(f *FSM, logs []*raft.Log) []interface{} {
			var out []interface{}
			for _, l := range logs {
				out = append(out, f.Apply(l))
			}
			return out
		}},
		{"ApplyBatch", func(f *FSM, logs []*raft.Log) []interface{} { return f.ApplyBatch(logs) }},
	} {
		t.Run(apply.name, func(t *testing.T) {
			var halts []error
			f := New(Options{Group: 3, OnHalt: func(err error) { halts = append(halts, err) }})
			n := &node{t: t, f: f}
			n.create("r", region.Replicate)
			good := func(k string) *raft.Log {
				return n.log(codec.Command{Op: codec.OpPut, Region: "r", Entries: []region.Entry{{Key: k, Value: json.RawMessage(`{}`)}}})
			}
			logs := []*raft.Log{good("a"), good("b")}
			n.index++
			logs = append(logs, &raft.Log{Index: n.index, Term: 2, Type: raft.LogCommand, Data: []byte{9, 9}})
			badIndex := n.index
			logs = append(logs, good("c"))
			out := apply.fn(f, logs)

			if got := f.AppliedIndex(); got != badIndex-1 {
				t.Errorf("AppliedIndex = %d, want %d (the entry before the bad one)", got, badIndex-1)
			}
			var h *HaltError
			if err := f.Halted(); !errors.As(err, &h) || h.Group != 3 || h.Index != badIndex || !errors.Is(err, ErrHalted) {
				t.Fatalf("Halted() = %v, want a HaltError for group 3 at entry %d", err, badIndex)
			}
			if msg := f.Halted().Error(); !strings.Contains(msg, "raft group 3") || !strings.Contains(msg, fmt.Sprintf("entry %d", badIndex)) {
				t.Errorf("halt message %q does not name the group and the entry", msg)
			}
			if len(halts) != 1 {
				t.Errorf("OnHalt called %d times, want once", len(halts))
			}
			for i, want := range []bool{false, false, true, true} {
				res, _ := out[i].(*codec.Result)
				if res == nil {
					t.Fatalf("entry %d: result %T, want *Result", i, out[i])
				}
				if got := errors.Is(res.Err, region.ErrIndeterminate) && errors.Is(res.Err, ErrHalted); got != want {
					t.Errorf("entry %d: result error %v; halted answer = %v, want %v", i, res.Err, got, want)
				}
			}
			if v, _ := f.GetMany("r", 0, []string{"a", "c"}); v[0] == nil || v[1] != nil {
				t.Errorf("values of a, c = %s, %s; want a stored, c not (after the bad entry)", v[0], v[1])
			}
			// Later entries are not applied either.
			if res, _ := f.Apply(good("d")).(*codec.Result); res == nil || !errors.Is(res.Err, ErrHalted) {
				t.Errorf("Apply after the halt = %v, want the halt error", res)
			}
			if _, err := f.Snapshot(); !errors.Is(err, ErrHalted) {
				t.Errorf("Snapshot of a halted FSM: %v, want ErrHalted", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := f.WaitApplied(ctx, badIndex); !errors.Is(err, ErrHalted) {
				t.Errorf("WaitApplied past the halt: %v, want ErrHalted (at once, not at the deadline)", err)
			}
			if err := f.WaitApplied(ctx, badIndex-1); err != nil {
				t.Errorf("WaitApplied of an applied index on a halted FSM: %v", err)
			}
		})
	}
}

// TestApplyHaltsWhenAHandlerPanics: a handler's panic (a bug, which may
// have left the state half-changed) halts the state machine too.
func TestApplyHaltsWhenAHandlerPanics(t *testing.T) {
	f := New(Options{Group: 5})
	n := &node{t: t, f: f}
	n.create("r", region.Replicate)
	f.ops[codec.OpDelete] = func(*state, *codec.Command, uint64) *codec.Result { panic("boom") }
	res := n.apply(codec.Command{Op: codec.OpDelete, Region: "r", Keys: []string{"k"}})
	if !errors.Is(res.Err, ErrHalted) || !strings.Contains(f.Halted().Error(), "boom") {
		t.Fatalf("result %v, Halted %v; want the state machine halted naming the panic", res.Err, f.Halted())
	}
	if got := f.AppliedIndex(); got != 1 {
		t.Errorf("AppliedIndex = %d, want 1", got)
	}
}

// TestApplyBatchEqualsSequentialApply runs the same log through Apply one
// entry at a time and through ApplyBatch in uneven batches; results, state,
// applied index and even the snapshot bytes must be identical.
func TestApplyBatchEqualsSequentialApply(t *testing.T) {
	gen := newNode(t) // only used to number the entries
	var logs []*raft.Log
	add := func(c codec.Command) { logs = append(logs, gen.log(c)) }
	add(codec.Command{Op: codec.OpCreateRegion, Region: "r", Kind: region.Replicate})
	add(codec.Command{Op: codec.OpCreateRegion, Region: "p", Kind: region.Partition})
	gen.index++
	logs = append(logs, &raft.Log{Index: gen.index, Type: raft.LogConfiguration, Data: []byte("cfg")})
	for i := 0; i < 40; i++ {
		k := string(rune('a' + i%7))
		add(codec.Command{Op: codec.OpPut, Region: "r", Entries: entries(k, `{"i":1}`, "x"+k, `{}`)})
		add(codec.Command{Op: codec.OpPutIfAbsent, Region: "r", Entries: entries("", `{"gen":1}`)})
		add(codec.Command{Op: codec.OpPutIfAbsent, Region: "p", Entries: entries(k, `{}`)})
		add(codec.Command{Op: codec.OpCAS, Region: "r", Pairs: []region.CASPair{{Key: k, Old: []byte(`{"i":1}`), New: []byte(`{"i":2}`)}}})
		add(codec.Command{Op: codec.OpReplace, Region: "r", Entries: entries("x"+k, `{"r":1}`, "missing", `{}`)})
		add(codec.Command{Op: codec.OpDelete, Region: "r", Keys: []string{"x" + k}})
		add(codec.Command{Op: codec.OpPut, Region: "q", RegionID: uint64(100 + i/10), Entries: entries(k, `{"q":1}`)})
		add(codec.Command{Op: codec.OpPutIfAbsent, Region: "q", RegionID: uint64(100 + i/10), Entries: entries("", `{"g":1}`)})
		add(codec.Command{Op: codec.OpSetMeta, MetaKey: "m", MetaVersion: uint64(i), MetaValue: []byte{byte(i)}})
		add(codec.Command{Op: codec.OpBatch, Batch: [][]byte{
			(&codec.Command{Op: codec.OpPut, Region: "r", Entries: entries("b"+k, `{"b":1}`)}).Encode(nil),
			(&codec.Command{Op: codec.OpPutIfAbsent, Region: "r", Entries: entries("", `{"gen":2}`)}).Encode(nil),
			(&codec.Command{Op: codec.OpDelete, Region: "r", Keys: []string{"missing"}}).Encode(nil),
		}})
		if i%10 == 9 {
			add(codec.Command{Op: codec.OpDestroyRegion, Region: "q", RegionID: uint64(100 + i/10 - 1)})
			add(codec.Command{Op: codec.OpClear, Region: "r"})
			add(codec.Command{Op: codec.OpClear, Region: "p"})
		}
	}

	seq := New(Options{})
	var seqRes []interface{}
	for _, l := range logs {
		seqRes = append(seqRes, seq.Apply(l))
	}
	batch := New(Options{})
	var batchRes []interface{}
	for i, size := 0, 1; i < len(logs); i, size = i+size, size%13+1 {
		end := min(i+size, len(logs))
		got := batch.ApplyBatch(logs[i:end])
		if len(got) != end-i {
			t.Fatalf("ApplyBatch of %d entries returned %d responses", end-i, len(got))
		}
		batchRes = append(batchRes, got...)
	}

	for i := range logs {
		s, b := seqRes[i], batchRes[i]
		if (s == nil) != (b == nil) {
			t.Fatalf("entry %d: sequential %v, batched %v", i, s, b)
		}
		if s == nil {
			continue
		}
		codectest.CheckSameResult(t, b.(*codec.Result), s.(*codec.Result))
	}
	if got, want := dump(t, batch), dump(t, seq); got != want {
		t.Errorf("batched state:\n%s\nsequential state:\n%s", got, want)
	}
	if got, want := batch.AppliedIndex(), seq.AppliedIndex(); got != want || got != gen.index {
		t.Errorf("batched AppliedIndex = %d, sequential %d, want %d", got, want, gen.index)
	}
	if !bytes.Equal(persist(t, batch), persist(t, seq)) {
		t.Error("snapshots of the batched and the sequential FSM differ")
	}
}
