package fsm

import (
	"strconv"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/kvnode/kvnode/region"
)

// benchKeys is how many distinct keys the write benchmarks cycle through.
const benchKeys = 4096

func benchKey(i int) string { return "order-" + strconv.Itoa(i%benchKeys) }

// benchNode returns an FSM with region "orders" holding benchKeys entries.
func benchNode(b *testing.B) *node {
	b.Helper()
	n := &node{f: New(Options{})}
	apply := func(c Command) {
		if res := n.f.Apply(n.log(c)).(*Result); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
	apply(Command{Op: OpCreateRegion, Region: "orders", Kind: region.Replicate})
	for i := 0; i < benchKeys; i++ {
		apply(Command{Op: OpPut, Region: "orders", Entries: entries(benchKey(i), orderValue)})
	}
	return n
}

// benchLogs pre-encodes count commands so the loop measures Apply alone
// (decoding included, as Raft hands Apply the encoded entry).
func benchLogs(n *node, count int, mk func(i int) Command) []*raft.Log {
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
		if res := n.f.Apply(logs[i%len(logs)]).(*Result); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
}

func BenchmarkApply(b *testing.B) {
	value := []byte(orderValue)
	b.Run("Put", func(b *testing.B) {
		n := benchNode(b)
		runApply(b, n, benchLogs(n, benchKeys, func(i int) Command {
			return Command{Op: OpPut, Region: "orders", Entries: []region.Entry{{Key: benchKey(i), Value: value}}}
		}))
	})
	b.Run("PutAll16", func(b *testing.B) {
		n := benchNode(b)
		runApply(b, n, benchLogs(n, benchKeys/16, func(i int) Command {
			es := make([]region.Entry, 16)
			for j := range es {
				es[j] = region.Entry{Key: benchKey(i*16 + j), Value: value}
			}
			return Command{Op: OpPut, Region: "orders", Entries: es}
		}))
	})
	b.Run("PutIfAbsent", func(b *testing.B) {
		// Generated keys: every iteration creates a new entry. A fresh FSM
		// every 64k entries bounds memory.
		const round = 1 << 16
		log := &raft.Log{Type: raft.LogCommand, Data: (&Command{Op: OpPutIfAbsent, Region: "orders",
			Entries: []region.Entry{{Value: value}}}).Encode(nil)}
		var n *node
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if i%round == 0 {
				b.StopTimer()
				n = benchNode(b)
				b.StartTimer()
			}
			if res := n.f.Apply(log).(*Result); res.Err != nil {
				b.Fatal(res.Err)
			}
		}
	})
	b.Run("Replace", func(b *testing.B) {
		n := benchNode(b)
		runApply(b, n, benchLogs(n, benchKeys, func(i int) Command {
			return Command{Op: OpReplace, Region: "orders", Entries: []region.Entry{{Key: benchKey(i), Value: value}}}
		}))
	})
	b.Run("CAS", func(b *testing.B) {
		// Old is byte-identical to the stored value: the usual case of a
		// client that read the entry and sends it back.
		n := benchNode(b)
		runApply(b, n, benchLogs(n, benchKeys, func(i int) Command {
			return Command{Op: OpCAS, Region: "orders", Pairs: []region.CASPair{{Key: benchKey(i), Old: value, New: value}}}
		}))
	})
	b.Run("CASReordered", func(b *testing.B) {
		// Old has the same members in another order: the full JSON comparison.
		reordered := []byte(`{"purchaseOrderNo":1121,"@type":"Order","customerId":1012,"description":"Order for XYZ Corp",` +
			`"orderDate":"02/10/2024","email":"jelly@example.com","totalPrice":225.5,` +
			`"items":[{"quantity":5,"itemNo":1,"unitPrice":45.1}]}`)
		if !jsonEqual(reordered, value) {
			b.Fatal("reordered value does not equal the stored one")
		}
		n := benchNode(b)
		runApply(b, n, benchLogs(n, benchKeys, func(i int) Command {
			return Command{Op: OpCAS, Region: "orders", Pairs: []region.CASPair{{Key: benchKey(i), Old: reordered, New: value}}}
		}))
	})
	b.Run("Delete", func(b *testing.B) {
		// Delete every key, then refill the region off the clock.
		n := benchNode(b)
		dels := benchLogs(n, benchKeys, func(i int) Command {
			return Command{Op: OpDelete, Region: "orders", Keys: []string{benchKey(i)}}
		})
		puts := benchLogs(n, benchKeys, func(i int) Command {
			return Command{Op: OpPut, Region: "orders", Entries: []region.Entry{{Key: benchKey(i), Value: value}}}
		})
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if i > 0 && i%benchKeys == 0 {
				b.StopTimer()
				n.f.ApplyBatch(puts)
				b.StartTimer()
			}
			if res := n.f.Apply(dels[i%benchKeys]).(*Result); res.Err != nil {
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

func benchCommand() Command {
	return Command{Op: OpPut, Region: "orders", Entries: []region.Entry{{Key: "order-1121", Value: []byte(orderValue)}}}
}

func BenchmarkEncodeCommand(b *testing.B) {
	c := benchCommand()
	buf := c.Encode(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf = c.Encode(buf[:0])
	}
}

func BenchmarkDecodeCommand(b *testing.B) {
	c := benchCommand()
	data := c.Encode(nil)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := DecodeCommand(data); err != nil {
			b.Fatal(err)
		}
	}
}
