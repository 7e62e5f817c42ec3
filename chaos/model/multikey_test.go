package model

import (
	"os"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Families in these tests: a-1, a-2, a-3 are family a (one Raft group),
// b-1, b-2 family b.

func mget(keys ...string) Input { return Input{Kind: MultiGet, Keys: keys, OneGroup: true} }
func query(keys ...string) Input {
	return Input{Kind: Query, Keys: keys, OneGroup: true}
}
func mput(keys []string, vals ...int64) Input {
	return Input{Kind: MultiPut, Keys: keys, Values: vals, OneGroup: true}
}
func mrep(keys []string, vals ...int64) Input {
	return Input{Kind: MultiReplace, Keys: keys, Values: vals, OneGroup: true}
}
func mcas(keys []string, olds, vals []int64) Input {
	return Input{Kind: MultiCAS, Keys: keys, Olds: olds, Values: vals, OneGroup: true}
}
func mdel(keys ...string) Input { return Input{Kind: MultiDelete, Keys: keys, OneGroup: true} }

// spanning marks a request whose keys are in several Raft groups.
func spanning(in Input) Input { in.OneGroup = false; return in }

func read(vals ...int64) Output { return Output{Status: 200, Values: vals} }

func ks(keys ...string) []string { return keys }
func vs(vals ...int64) []int64   { return vals }

func TestModelAcceptsLinearizableMultiKeyHistories(t *testing.T) {
	a12 := ks("a-1", "a-2")
	cases := map[string][]Op{
		"sequential, every multi-key kind": {
			op(0, 0, 1, mget("a-1", "a-2"), read(0, 0)),
			op(0, 2, 3, mrep(a12, 1, 2), status(400)),
			op(0, 4, 5, mdel("a-1", "a-2"), status(404)),
			op(0, 6, 7, mcas(a12, vs(1, 2), vs(3, 4)), status(400)),
			op(0, 8, 9, mput(a12, 1, 2), status(200)),
			op(0, 10, 11, mget("a-2", "a-1"), read(2, 1)),
			op(0, 12, 13, query("a-1", "a-2", "a-3"), read(1, 2, 0)),
			op(0, 14, 15, mcas(a12, vs(1, 9), vs(3, 4)), value(409, 2)),
			op(0, 16, 17, mcas(a12, vs(1, 2), vs(3, 4)), status(200)),
			op(0, 18, 19, mrep(a12, 5, 6), status(200)),
			op(0, 20, 21, get("a-1"), value(200, 5)),
			op(0, 22, 23, mdel("a-1", "a-2"), status(200)),
			op(0, 24, 25, query("a-1", "a-2"), read(0, 0)),
		},
		"a read concurrent with a multi-key put sees all of it or none": {
			op(0, 0, 1, mput(a12, 1, 2), status(200)),
			op(0, 2, 10, mput(a12, 3, 4), status(200)),
			op(1, 3, 4, mget("a-1", "a-2"), read(1, 2)),
			op(2, 5, 6, query("a-1", "a-2"), read(3, 4)),
		},
		"an indeterminate multi-key put seen whole later": {
			op(0, 0, -1, mput(a12, 1, 2), Output{}),
			op(1, 5, 6, mget("a-1", "a-2"), read(1, 2)),
		},
		"an indeterminate multi-key put never seen": {
			op(0, 0, -1, mput(a12, 1, 2), Output{}),
			op(1, 5, 6, mget("a-1", "a-2"), read(0, 0)),
		},
		"a request over two families is checked per family": {
			op(0, 0, 1, spanning(mput(ks("a-1", "b-1"), 1, 2)), status(200)),
			op(1, 2, 3, spanning(query("b-1", "a-1")), read(2, 1)),
		},
		"a refused request over two groups may have applied one part": {
			op(0, 0, 1, spanning(mput(ks("a-1", "b-1"), 1, 2)), status(200)),
			// a-1 matches, b-1 does not: group a applies, group b refuses.
			op(1, 2, 3, spanning(mcas(ks("a-1", "b-1"), vs(1, 9), vs(3, 4))), value(409, 2)),
			op(1, 4, 5, spanning(mget("a-1", "b-1")), read(3, 2)),
		},
		"a refused request over two groups may have applied nothing": {
			op(0, 0, 1, spanning(mput(ks("a-1", "b-1"), 1, 2)), status(200)),
			op(1, 2, 3, spanning(mcas(ks("a-1", "b-1"), vs(1, 9), vs(3, 4))), value(409, 2)),
			op(1, 4, 5, spanning(mget("a-1", "b-1")), read(1, 2)),
		},
		"an indeterminate request over two groups: each part on its own": {
			op(0, 0, -1, spanning(mput(ks("a-1", "b-1"), 1, 2)), Output{}),
			op(1, 2, 3, spanning(mget("a-1", "b-1")), read(1, 0)),
			op(1, 4, 5, spanning(mget("a-1", "b-1")), read(1, 2)),
		},
		"a refused one-group request over two families changed nothing": {
			op(0, 0, 1, mput(ks("a-1", "b-1"), 1, 2), status(200)),
			op(0, 2, 3, mdel("b-1"), status(200)),
			// b-1 is missing: nothing replaced, a-1 keeps 1.
			op(0, 4, 5, mrep(ks("a-1", "b-1"), 3, 4), status(400)),
			op(0, 6, 7, mget("a-1", "b-1"), read(1, 0)),
		},
	}
	for name, ops := range cases {
		if got := check(t, ops); got != porcupine.Ok {
			t.Errorf("%s: %v, want Ok", name, got)
		}
	}
}

func TestModelRejectsMultiKeyViolations(t *testing.T) {
	a12 := ks("a-1", "a-2")
	cases := map[string][]Op{
		"a multi-key put seen half-applied": {
			op(0, 0, 10, mput(a12, 1, 2), status(200)),
			op(1, 1, 2, mget("a-1", "a-2"), read(1, 0)),
			op(1, 3, 4, mget("a-1", "a-2"), read(0, 0)),
		},
		"a multi-key get that sees a partial write": {
			op(0, 0, 1, mput(a12, 1, 2), status(200)),
			op(0, 2, 10, mput(a12, 3, 4), status(200)),
			op(1, 3, 4, mget("a-1", "a-2"), read(3, 2)),
		},
		"a query that sees a partial write": {
			op(0, 0, 1, mput(a12, 1, 2), status(200)),
			op(0, 2, 10, mput(a12, 3, 4), status(200)),
			op(1, 3, 4, query("a-1", "a-2"), read(1, 4)),
		},
		"a lost multi-key write": {
			op(0, 0, 1, mput(a12, 1, 2), status(200)),
			op(1, 2, 3, mget("a-1", "a-2"), read(1, 0)),
		},
		"a query returning a state that never existed": {
			op(0, 0, 1, mput(a12, 1, 2), status(200)),
			op(0, 2, 3, mput(a12, 3, 4), status(200)),
			op(1, 4, 5, query("a-1", "a-2"), read(3, 2)),
		},
		"a query returning a value never written": {
			op(0, 0, 1, put("a-1", 1), status(200)),
			op(1, 2, 3, query("a-1"), read(7)),
		},
		"an indeterminate multi-key put applied in halves": {
			op(0, 0, -1, mput(a12, 1, 2), Output{}),
			op(1, 5, 6, mget("a-1", "a-2"), read(1, 0)),
		},
		"a refused multi-key replace that applied": {
			op(0, 0, 1, put("a-1", 1), status(200)),
			op(0, 2, 3, mrep(a12, 3, 4), status(400)),
			op(0, 4, 5, get("a-1"), value(200, 3)),
		},
		"a multi-key replace refused while every key existed": {
			op(0, 0, 1, mput(a12, 1, 2), status(200)),
			op(0, 2, 3, mrep(a12, 3, 4), status(400)),
		},
		"a multi-key delete acknowledged with a key missing": {
			op(0, 0, 1, put("a-1", 1), status(200)),
			op(0, 2, 3, mdel("a-1", "a-2"), status(200)),
		},
		"a multi-key CAS 409 naming a value that was not current": {
			op(0, 0, 1, mput(a12, 1, 2), status(200)),
			op(0, 2, 3, mcas(a12, vs(1, 9), vs(3, 4)), value(409, 9)),
		},
		"two multi-key CAS from the same values both won": {
			op(0, 0, 1, mput(a12, 1, 2), status(200)),
			op(1, 2, 10, mcas(a12, vs(1, 2), vs(3, 4)), status(200)),
			op(2, 2, 10, mcas(a12, vs(1, 2), vs(5, 6)), status(200)),
		},
		"a refused one-group request over two families that changed one": {
			op(0, 0, 1, mput(ks("a-1", "b-1"), 1, 2), status(200)),
			op(0, 2, 3, mdel("b-1"), status(200)),
			op(0, 4, 5, mrep(ks("a-1", "b-1"), 3, 4), status(400)),
			op(0, 6, 7, get("a-1"), value(200, 3)),
		},
		"a refused request over two groups whose part landed after the answer": {
			op(0, 0, 1, spanning(mput(ks("a-1", "b-1"), 1, 2)), status(200)),
			op(1, 2, 3, spanning(mcas(ks("a-1", "b-1"), vs(1, 9), vs(3, 4))), value(409, 2)),
			op(1, 4, 5, get("a-1"), value(200, 1)),
			op(1, 6, 7, get("a-1"), value(200, 3)),
		},
		"an acknowledged request over two groups with a part lost": {
			op(0, 0, 1, spanning(mput(ks("a-1", "b-1"), 1, 2)), status(200)),
			op(1, 2, 3, spanning(query("a-1", "b-1")), read(1, 0)),
		},
		"a put-all answered with a refusal": {
			op(0, 0, 1, spanning(mput(ks("a-1", "b-1"), 1, 2)), status(409)),
		},
	}
	for name, ops := range cases {
		if got := check(t, ops); got != porcupine.Illegal {
			t.Errorf("%s: %v, want Illegal", name, got)
		}
	}
}

// TestMultiKeyViolationIsSavedAndReloads: a multi-key history survives
// the round trip through the saved JSON (keys, values, OneGroup) and still
// checks the same, and porcupine's visualization of it is written.
func TestMultiKeyViolationIsSavedAndReloads(t *testing.T) {
	ops := []Op{
		op(0, 0, 1, spanning(mput(ks("a-1", "b-1", "a-2"), 1, 2, 3)), status(200)),
		op(1, 2, 3, spanning(mcas(ks("a-1", "b-1"), vs(1, 9), vs(4, 5))), value(409, 2)),
		op(1, 4, 5, query("a-2", "a-1"), read(3, 1)),
		op(1, 6, 7, mget("a-1", "a-2"), read(4, 3)),
	}
	v := Check(ops, 10*time.Second)
	if v.Result != porcupine.Illegal {
		t.Fatalf("verdict %v, want Illegal: a-1 changed after the refusal's answer", v.Result)
	}
	hp, html, err := v.Save(t.TempDir(), "multi", ops)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(html); err != nil || st.Size() == 0 {
		t.Errorf("visualization %s: %v", html, err)
	}
	back, err := LoadHistory(hp)
	if err != nil {
		t.Fatal(err)
	}
	if got := Check(back, 10*time.Second).Result; got != porcupine.Illegal {
		t.Errorf("the reloaded history checks %v, want Illegal", got)
	}
	if got := Check(back[:3], 10*time.Second).Result; got != porcupine.Ok {
		t.Errorf("without the last read: %v, want Ok", got)
	}
}
