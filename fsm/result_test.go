package fsm

import (
	"testing"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/codec/codectest"
	"github.com/kvnode/kvnode/region"
)

// TestResultOfEveryRefusal sends the Results of real refusals through the
// codec, as a leader does for a forwarded write.
func TestResultOfEveryRefusal(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	n.create("p", region.Partition)
	n.put("r", "a", `{"v":1}`)
	for _, c := range []codec.Command{
		{Op: codec.OpCreateRegion, Region: "r", Kind: region.Replicate},
		{Op: codec.OpDestroyRegion, Region: "nope"},
		{Op: codec.OpPutIfAbsent, Region: "r", Entries: entries("a", `{}`)},
		{Op: codec.OpReplace, Region: "r", Entries: entries("zz", `{}`)},
		{Op: codec.OpCAS, Region: "r", Pairs: []region.CASPair{{Key: "a", Old: []byte(`{"v":2}`), New: []byte(`{}`)}}},
		{Op: codec.OpDelete, Region: "r", Keys: []string{"zz"}},
		{Op: codec.OpClear, Region: "p"},
		{Op: codec.OpPut, Region: "r"},
	} {
		res := n.apply(c)
		if res.Err == nil {
			t.Fatalf("%v was not refused", c.Op)
		}
		got, err := codec.DecodeResult(codec.EncodeResult(nil, res))
		if err != nil {
			t.Fatalf("%v: DecodeResult: %v", c.Op, err)
		}
		codectest.CheckSameResult(t, got, res)
	}
}
