package fsm

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"testing"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

func keysOf(list []region.Entry) []string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.Key
	}
	return out
}

func TestListLimitAndOrder(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	n.create("empty", region.Replicate)
	// Inserted out of order; ordering is byte-wise ("10" < "9", "Z" < "a" < "é").
	n.put("r", "é", `{"k":"é"}`, "9", `{"k":"9"}`, "a", `{"k":"a"}`, "10", `{"k":"10"}`, "Z", `{"k":"Z"}`)
	all := []string{"10", "9", "Z", "a", "é"}
	for _, tc := range []struct {
		limit int
		want  []string
	}{
		{-1, all}, {-50, all}, {0, []string{}}, {1, all[:1]}, {3, all[:3]}, {5, all}, {50, all},
	} {
		got, err := n.f.List("r", 0, tc.limit)
		if err != nil {
			t.Fatalf("List(r, %d): %v", tc.limit, err)
		}
		if keys := keysOf(got); !reflect.DeepEqual(keys, tc.want) {
			t.Errorf("List(r, %d) keys = %q, want %q", tc.limit, keys, tc.want)
		}
		for _, e := range got {
			if want := `{"k":"` + e.Key + `"}`; string(e.Value) != want {
				t.Errorf("List(r, %d): %q has value %s, want %s", tc.limit, e.Key, e.Value, want)
			}
		}
	}
	if got, err := n.f.List("empty", 0, -1); err != nil || got == nil || len(got) != 0 {
		t.Errorf("List(empty, -1) = %#v, %v; want an empty non-nil slice", got, err)
	}
	if keys, err := n.f.Keys("r", 0); err != nil || !reflect.DeepEqual(keys, all) {
		t.Errorf("Keys(r) = %q, %v; want %q", keys, err, all)
	}
	if c, err := n.f.Count("r", 0); err != nil || c != len(all) {
		t.Errorf("Count(r) = %d, %v; want %d", c, err, len(all))
	}
}

func TestListManyEntries(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	var want []string
	for i := 999; i >= 0; i-- {
		k := strconv.Itoa(100000 + i) // equal width: numeric order is byte order
		n.put("r", k, `{}`)
		want = append([]string{k}, want...)
	}
	got, err := n.f.List("r", 0, 700)
	if err != nil {
		t.Fatal(err)
	}
	if keys := keysOf(got); !reflect.DeepEqual(keys, want[:700]) {
		t.Errorf("List(r, 700) returned %d keys from %q, want %d from %q", len(keys), keys[0], 700, want[0])
	}
}

func TestGetAndGetMany(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	n.put("r", "a", `{"a":1}`, "b", `{"b":2}`)

	if v, err := n.f.Get("r", 0, "a"); err != nil || string(v) != `{"a":1}` {
		t.Errorf("Get(r, a) = %s, %v; want {\"a\":1}", v, err)
	}
	if _, err := n.f.Get("r", 0, "zz"); !errors.Is(err, region.ErrKeyNotFound) {
		t.Errorf("Get(r, zz) error = %v, want ErrKeyNotFound", err)
	}

	got, err := n.f.GetMany("r", 0, []string{"b", "zz", "a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	want := []json.RawMessage{[]byte(`{"b":2}`), nil, []byte(`{"a":1}`), []byte(`{"b":2}`)}
	if len(got) != len(want) {
		t.Fatalf("GetMany returned %d values, want %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i]) != string(want[i]) || (got[i] == nil) != (want[i] == nil) {
			t.Errorf("GetMany value %d = %q, want %q", i, got[i], want[i])
		}
	}
	if got, err := n.f.GetMany("r", 0, nil); err != nil || len(got) != 0 {
		t.Errorf("GetMany(r, nil) = %q, %v; want no values", got, err)
	}
}

func TestReadsOfUnknownRegion(t *testing.T) {
	f := New(Options{})
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, region.ErrRegionNotFound) {
			t.Errorf("%s on an unknown region: error %v, want ErrRegionNotFound", op, err)
		}
	}
	_, err := f.Get("nope", 0, "k")
	check("Get", err)
	_, err = f.GetMany("nope", 0, []string{"k"})
	check("GetMany", err)
	_, err = f.List("nope", 0, -1)
	check("List", err)
	_, err = f.Keys("nope", 0)
	check("Keys", err)
	_, err = f.Count("nope", 0)
	check("Count", err)
	if _, ok := f.Region("nope"); ok {
		t.Error("Region(nope) reported found")
	}
}

func TestRegionsSorted(t *testing.T) {
	n := newNode(t)
	if got := n.f.Regions(); got == nil || len(got) != 0 {
		t.Errorf("Regions of a new FSM = %#v, want an empty non-nil slice", got)
	}
	for _, name := range []string{"zeta", "Alpha", "mid", "alpha"} {
		n.create(name, region.Replicate)
	}
	n.must(codec.Command{Op: codec.OpCreateRegion, Region: "part", Kind: region.Partition})
	want := []region.Info{
		{Name: "Alpha", Kind: region.Replicate}, {Name: "alpha", Kind: region.Replicate},
		{Name: "mid", Kind: region.Replicate}, {Name: "part", Kind: region.Partition},
		{Name: "zeta", Kind: region.Replicate},
	}
	if got := n.f.Regions(); !reflect.DeepEqual(got, want) {
		t.Errorf("Regions() = %v, want %v", got, want)
	}
	if got, ok := n.f.Region("part"); !ok || got != want[3] {
		t.Errorf("Region(part) = %v, %v; want %v, true", got, ok, want[3])
	}
}
