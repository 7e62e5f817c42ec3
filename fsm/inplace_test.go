package fsm

import (
	"bytes"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// TestValuesDecodedInPlace: ApplyBatch keeps slices of the entry's Data as
// the stored values (no copy), each capped at its own end, so that an
// append to a value read back never writes into the value after it, in a
// multi-key put and in a batch's sub-commands alike; an entry applied later
// into another buffer leaves the earlier values as they were. (Until the
// restart work of issue 30 values were copied out of the entry, and
// TestValuesDoNotAliasTheLog pinned that; ApplyBatch's doc says why raft's
// entries may be kept in place.)
func TestValuesDecodedInPlace(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	put := n.log(codec.Command{Op: codec.OpPut, Region: "r", Entries: entries("a", `{"v":"a"}`, "b", `{"v":"b"}`)})
	sub := func(k, v string) []byte {
		return (&codec.Command{Op: codec.OpPut, Region: "r", Entries: entries(k, v)}).Encode(nil)
	}
	batch := n.log(codec.Command{Op: codec.OpBatch, Batch: [][]byte{sub("c", `{"v":"c"}`), sub("d", `{"v":"d"}`)}})
	for _, res := range n.f.ApplyBatch([]*raft.Log{put, batch}) {
		if r, ok := res.(*codec.Result); !ok || r.Err != nil || (r.Batch != nil && (r.Batch[0].Err != nil || r.Batch[1].Err != nil)) {
			t.Fatalf("apply: %#v", res)
		}
	}
	for _, tc := range []struct {
		key   string
		entry []byte
	}{{"a", put.Data}, {"b", put.Data}, {"c", batch.Data}, {"d", batch.Data}} {
		v, err := n.f.Get("r", 0, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if cap(v) != len(v) {
			t.Errorf("value of %s has room past its end (%d of %d)", tc.key, len(v), cap(v))
		}
		if !sameMemory(v, tc.entry) {
			t.Errorf("value of %s is a copy, not a slice of its entry", tc.key)
		}
	}
	a, _ := n.f.Get("r", 0, "a")
	_ = append(a, `,"tail"`...)
	if b, _ := n.f.Get("r", 0, "b"); string(b) != `{"v":"b"}` {
		t.Fatalf("an append to a's value changed b's: %s", b)
	}
	later := n.log(codec.Command{Op: codec.OpPut, Region: "r", Entries: entries("e", `{"v":"e"}`)})
	n.f.ApplyBatch([]*raft.Log{later})
	for i := range later.Data { // the newest entry's buffer, however it is treated, is not the others'
		later.Data[i] = 'X'
	}
	for _, k := range []string{"a", "b", "c", "d"} {
		if v, _ := n.f.Get("r", 0, k); string(v) != `{"v":"`+k+`"}` {
			t.Errorf("value of %s changed with another entry's buffer: %s", k, v)
		}
	}
}

// sameMemory reports whether v lies inside buf's memory.
func sameMemory(v, buf []byte) bool {
	if len(v) == 0 || len(buf) == 0 {
		return false
	}
	full := buf[:cap(buf)]
	for i := 0; i+len(v) <= len(full); i++ {
		if &full[i] == &v[0] {
			return bytes.Equal(full[i:i+len(v)], v)
		}
	}
	return false
}
