package fsm

import (
	"bytes"
	"io"
	"strconv"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/jsonequal"
	"github.com/kvnode/kvnode/region"
)

// benchKeys is how many distinct keys the write benchmarks cycle through.
const benchKeys = 4096

func benchKey(i int) string { return "order-" + strconv.Itoa(i%benchKeys) }

// benchNode returns an FSM with region "orders" holding benchKeys entries.
func benchNode(b *testing.B) *node {
	b.Helper()
	n := &node{f: New(Options{})}
	apply := func(c codec.Command) {
		if res := n.f.Apply(n.log(c)).(*codec.Result); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
	apply(codec.Command{Op: codec.OpCreateRegion, Region: "orders", Kind: region.Replicate})
	for i := 0; i < benchKeys; i++ {
		apply(codec.Command{Op: codec.OpPut, Region: "orders", Entries: entries(benchKey(i), orderValue)})
	}
	return n
}

// benchLogs pre-encodes count commands so the loop measures Apply alone
// (decoding included, as Raft hands Apply the encoded entry).
func benchLogs(n *node, count int, mk func(i int) codec.Command) []*raft.Log {
	logs := make([]*raft.Log, count)
	for i := range logs {
		logs[i] = n.log(mk(i))
	}
	return logs
}

func runApply(b *testing.B, n *node, logs []*raft.Log) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := n.f.Apply(logs[i%len(logs)]).(*codec.Result); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
}

func BenchmarkApply(b *testing.B) {
	value := []byte(orderValue)
	b.Run("Put", func(b *testing.B) {
		n := benchNode(b)
		runApply(b, n, benchLogs(n, benchKeys, func(i int) codec.Command {
			return codec.Command{Op: codec.OpPut, Region: "orders", Entries: []region.Entry{{Key: benchKey(i), Value: value}}}
		}))
	})
	b.Run("PutAll16", func(b *testing.B) {
		n := benchNode(b)
		runApply(b, n, benchLogs(n, benchKeys/16, func(i int) codec.Command {
			es := make([]region.Entry, 16)
			for j := range es {
				es[j] = region.Entry{Key: benchKey(i*16 + j), Value: value}
			}
			return codec.Command{Op: codec.OpPut, Region: "orders", Entries: es}
		}))
	})
	b.Run("PutIfAbsent", func(b *testing.B) {
		// Generated keys: every iteration creates a new entry. A fresh FSM
		// every 64k entries bounds memory.
		const round = 1 << 16
		log := &raft.Log{Type: raft.LogCommand, Data: (&codec.Command{Op: codec.OpPutIfAbsent, Region: "orders",
			Entries: []region.Entry{{Value: value}}}).Encode(nil)}
		var n *node
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if i%round == 0 {
				b.StopTimer()
				n = benchNode(b)
				b.StartTimer()
			}
			if res := n.f.Apply(log).(*codec.Result); res.Err != nil {
				b.Fatal(res.Err)
			}
		}
	})
	b.Run("Replace", func(b *testing.B) {
		n := benchNode(b)
		runApply(b, n, benchLogs(n, benchKeys, func(i int) codec.Command {
			return codec.Command{Op: codec.OpReplace, Region: "orders", Entries: []region.Entry{{Key: benchKey(i), Value: value}}}
		}))
	})
	b.Run("CAS", func(b *testing.B) {
		// Old is byte-identical to the stored value: the usual case of a
		// client that read the entry and sends it back.
		n := benchNode(b)
		runApply(b, n, benchLogs(n, benchKeys, func(i int) codec.Command {
			return codec.Command{Op: codec.OpCAS, Region: "orders", Pairs: []region.CASPair{{Key: benchKey(i), Old: value, New: value}}}
		}))
	})
	b.Run("CASReordered", func(b *testing.B) {
		// Old has the same members in another order: the full JSON comparison.
		reordered := []byte(`{"purchaseOrderNo":1121,"@type":"Order","customerId":1012,"description":"Order for XYZ Corp",` +
			`"orderDate":"02/10/2024","email":"jelly@example.com","totalPrice":225.5,` +
			`"items":[{"quantity":5,"itemNo":1,"unitPrice":45.1}]}`)
		if !jsonequal.Equal(reordered, value) {
			b.Fatal("reordered value does not equal the stored one")
		}
		n := benchNode(b)
		runApply(b, n, benchLogs(n, benchKeys, func(i int) codec.Command {
			return codec.Command{Op: codec.OpCAS, Region: "orders", Pairs: []region.CASPair{{Key: benchKey(i), Old: reordered, New: value}}}
		}))
	})
	b.Run("Delete", func(b *testing.B) {
		// Delete every key, then refill the region off the clock.
		n := benchNode(b)
		dels := benchLogs(n, benchKeys, func(i int) codec.Command {
			return codec.Command{Op: codec.OpDelete, Region: "orders", Keys: []string{benchKey(i)}}
		})
		puts := benchLogs(n, benchKeys, func(i int) codec.Command {
			return codec.Command{Op: codec.OpPut, Region: "orders", Entries: []region.Entry{{Key: benchKey(i), Value: value}}}
		})
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if i > 0 && i%benchKeys == 0 {
				b.StopTimer()
				n.f.ApplyBatch(puts)
				b.StartTimer()
			}
			if res := n.f.Apply(dels[i%benchKeys]).(*codec.Result); res.Err != nil {
				b.Fatal(res.Err)
			}
		}
	})
	b.Run("Get", func(b *testing.B) {
		n := benchNode(b)
		keys := make([]string, benchKeys)
		for i := range keys {
			keys[i] = benchKey(i)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := n.f.Get("orders", 0, keys[i%benchKeys]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRestore reads a snapshot of 200,000 entries of ~200 bytes (as
// a restart does; docs/performance.md, "A million entries").
func BenchmarkRestore(b *testing.B) {
	n := &node{f: New(Options{})}
	if res := n.f.Apply(n.log(codec.Command{Op: codec.OpCreateRegion, Region: "orders", Kind: region.Replicate})).(*codec.Result); res.Err != nil {
		b.Fatal(res.Err)
	}
	value := []byte(orderValue)
	for i := 0; i < 200_000; i += 500 {
		var es []region.Entry
		for j := i; j < i+500; j++ {
			es = append(es, region.Entry{Key: "kvbench-" + strconv.Itoa(10_000_000+j), Value: value})
		}
		if res := n.f.Apply(n.log(codec.Command{Op: codec.OpPut, Region: "orders", Entries: es})).(*codec.Result); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
	data := persist(b, n.f)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := New(Options{}).Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
			b.Fatal(err)
		}
	}
}
