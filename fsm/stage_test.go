package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// applyRaw applies encoded entries at the next indexes and returns the last
// result.
func (n *node) applyRaw(entries ...[]byte) *codec.Result {
	n.t.Helper()
	var res *codec.Result
	for _, data := range entries {
		n.index++
		r, ok := n.f.Apply(&raft.Log{Index: n.index, Term: 1, Type: raft.LogCommand, Data: data}).(*codec.Result)
		if !ok {
			n.t.Fatalf("entry %d: no *Result", n.index)
		}
		res = r
	}
	return res
}

func bigPut(reg, key string, n int) (codec.Command, json.RawMessage) {
	v := json.RawMessage(`{"pad":"` + strings.Repeat("y", n) + `"}`)
	return codec.Command{Op: codec.OpPut, Region: reg, Entries: []region.Entry{{Key: key, Value: v}}}, v
}

// TestStagedCommandApplies: a command carried in chunks is applied at its
// commit, as if it had been one entry, with other entries in between.
func TestStagedCommandApplies(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	cmd, v := bigPut("r", "big", 3*codec.StageChunkBytes+12345)
	entries := codec.StageCommand(42, cmd.Encode(nil))
	if len(entries) != 5 {
		t.Fatalf("%d entries for a command of 3 chunks and a bit, want 4 chunks and a commit", len(entries))
	}
	for _, e := range entries[:len(entries)-1] {
		if len(e) > codec.StageChunkBytes+32 {
			t.Fatalf("a stage entry of %d bytes", len(e))
		}
		n.applyRaw(e)
		n.must(codec.Command{Op: codec.OpPut, Region: "r", Entries: entries2("small", `{"n":1}`)})
		if got, _ := n.f.GetMany("r", 0, []string{"big"}); got[0] != nil {
			t.Fatal("the staged value is visible before its commit")
		}
	}
	if res := n.applyRaw(entries[len(entries)-1]); res.Err != nil {
		t.Fatalf("commit: %v", res.Err)
	}
	got, err := n.f.GetMany("r", 0, []string{"big"})
	if err != nil || !bytes.Equal(got[0], v) {
		t.Fatalf("after the commit: %d bytes, %v; want the %d-byte value", len(got[0]), err, len(v))
	}
	if n.f.st.stage != nil {
		t.Error("chunks still staged after the commit")
	}
	// A staged command is refused like the same command in one entry.
	cas := codec.Command{Op: codec.OpCAS, Region: "r", Pairs: []region.CASPair{{Key: "big", Old: json.RawMessage(`{}`), New: v}}}
	if res := n.applyRaw(codec.StageCommand(43, cas.Encode(nil))...); !errors.Is(res.Err, region.ErrCASMismatch) {
		t.Errorf("staged CAS with a wrong @old: %v, want a CAS mismatch", res.Err)
	}
}

func entries2(k, v string) []region.Entry { return []region.Entry{{Key: k, Value: json.RawMessage(v)}} }

// TestStagedCommandIncomplete: a commit whose chunks are missing, out of
// order, replaced, dropped or expired writes nothing and is refused as a
// retryable error (503), and the chunks are forgotten.
func TestStagedCommandIncomplete(t *testing.T) {
	cmd, _ := bigPut("r", "big", 2*codec.StageChunkBytes+10)
	data := cmd.Encode(nil)
	for _, tc := range []struct {
		name  string
		apply func(n *node, e [][]byte) *codec.Result
	}{
		{"missing chunk", func(n *node, e [][]byte) *codec.Result { n.applyRaw(e[0]); return n.applyRaw(e[2], e[3]) }},
		{"chunks out of order", func(n *node, e [][]byte) *codec.Result { return n.applyRaw(e[1], e[0], e[2], e[3]) }},
		{"another staged command started", func(n *node, e [][]byte) *codec.Result {
			n.applyRaw(e[0], e[1])
			n.applyRaw(codec.StageCommand(7, data)[0])
			return n.applyRaw(e[2], e[3])
		}},
		{"dropped", func(n *node, e [][]byte) *codec.Result {
			n.applyRaw(e[0], e[1], e[2], codec.DropStaged(99))
			return n.applyRaw(e[3])
		}},
		{"expired", func(n *node, e [][]byte) *codec.Result {
			n.applyRaw(e[0], e[1], e[2])
			for i := 0; i <= maxStageGap; i++ {
				n.must(codec.Command{Op: codec.OpPut, Region: "r", Entries: entries2("k", `{}`)})
			}
			return n.applyRaw(e[3])
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			n.create("r", region.Replicate)
			e := codec.StageCommand(99, data)
			res := tc.apply(n, e)
			if !errors.Is(res.Err, region.ErrNoLeader) || !strings.Contains(res.Err.Error(), "nothing was written") {
				t.Fatalf("commit: %v; want refused as incomplete (503)", res.Err)
			}
			if got, _ := n.f.GetMany("r", 0, []string{"big"}); got[0] != nil {
				t.Error("an incomplete staged command wrote its value")
			}
			if n.f.st.stage != nil {
				t.Error("chunks still staged after the refused commit")
			}
		})
	}
}

// TestNoSnapshotWhileStaged: snapshots never hold staged chunks; one taken
// after the commit restores the committed value on a fresh replica.
func TestNoSnapshotWhileStaged(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	cmd, v := bigPut("r", "big", codec.StageChunkBytes+1)
	e := codec.StageCommand(5, cmd.Encode(nil))
	n.applyRaw(e[0])
	if _, err := n.f.Snapshot(); err == nil {
		t.Fatal("Snapshot while a command is staged succeeded")
	}
	n.applyRaw(e[1:]...)
	snap, err := n.f.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot after the commit: %v", err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	g := New(Options{})
	if err := restore(g, sink.buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if got, _ := g.GetMany("r", 0, []string{"big"}); !bytes.Equal(got[0], v) {
		t.Errorf("restored replica: %d bytes, want the staged value", len(got[0]))
	}
}
