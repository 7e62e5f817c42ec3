package input

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// BenchmarkEntries reads the body of a multi-key PUT of 1,000 order-shaped
// values (a bulk load's request): in one pass, and element by element as
// before (ParseArray, then region.NormalizeValue of each).
func BenchmarkEntries(b *testing.B) {
	keys := make([]string, 1000)
	vals := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%07d", i)
		vals[i] = fmt.Sprintf(`{"@type":"Order","purchaseOrderNo":%d,"customerId":%d,"orderDate":"01/15/2024","totalPrice":%d.5,"description":"%s"}`, i, i%100, i%990, strings.Repeat("x", 90))
	}
	body := []byte("[" + strings.Join(vals, ",") + "]")
	b.Run("one pass", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Entries(body, keys); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("element by element", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			elems, err := ParseArray(body, len(keys))
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range elems {
				if _, err := region.NormalizeValue(e); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
