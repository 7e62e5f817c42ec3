package codec

import (
	"testing"

	"github.com/kvnode/kvnode/region"
)

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
