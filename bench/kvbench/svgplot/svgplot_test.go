package svgplot

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
)

var sweep = Chart{
	Title:    `kvbench put on <orders> & "co"`,
	Subtitle: "closed loop",
	Points: []Point{
		{Concurrency: 64, OpsPerSec: 7369, P99Ms: 16.4},
		{Concurrency: 1, OpsPerSec: 794, P99Ms: 2.2},
		{Concurrency: 16, OpsPerSec: 4110, P99Ms: 6.6},
		{Concurrency: 256, OpsPerSec: 8012.5, P99Ms: 40.25},
	},
}

// TestWriteIsSVG: the document parses as XML, is an svg, and says the
// title (escaped) and every point's values.
func TestWriteIsSVG(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sweep); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	var texts []string
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v\n%s", err, buf.String())
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(tok)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	if root != "svg" {
		t.Errorf("root element %q", root)
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{`kvbench put on <orders> & "co"`, "7,369", "794", "8,013", "16.4", "2.2", "40.3", "1", "16", "64", "256",
		"throughput (ops/s)", "p99 latency (ms)", "concurrency (clients in flight)"} {
		if !strings.Contains("|"+all+"|", "|"+want+"|") {
			t.Errorf("no text %q in %s", want, all)
		}
	}
}

// TestLayout: concurrency on a log₂ axis in order; a higher value is
// higher on the page (smaller y); every point inside the plot.
func TestLayout(t *testing.T) {
	v, err := layout(sweep)
	if err != nil {
		t.Fatal(err)
	}
	xs := []float64{}
	for _, tk := range v.XTicks {
		xs = append(xs, tk.Pos)
	}
	// 1, 16, 64, 256 are 0, 4, 6, 8 on log₂: 16 half way, 64 at 3/4.
	span := xs[3] - xs[0]
	if math.Abs((xs[1]-xs[0])/span-0.5) > 0.01 || math.Abs((xs[2]-xs[0])/span-0.75) > 0.01 {
		t.Errorf("x positions %v are not log₂ of 1, 16, 64, 256", xs)
	}
	for i, m := range v.Thru {
		if m.X < plotLeft || m.X > plotRight || m.Y < plotTop || m.Y > plotBottom {
			t.Errorf("throughput point %d at (%v,%v) outside the plot", i, m.X, m.Y)
		}
		if i > 0 && m.Y >= v.Thru[i-1].Y {
			t.Errorf("throughput rises from %s to %s but its point does not", v.Thru[i-1].Label, m.Label)
		}
	}
	for i := 1; i < len(v.P99); i++ {
		if v.P99[i].Y >= v.P99[i-1].Y {
			t.Errorf("p99 rises but its point does not: %v", v.P99)
		}
	}
	if n := len(v.LTicks) - 1; v.LTicks[0].Label != "0" || v.LTicks[n].Label != "10,000" || v.RTicks[n].Label != "50" || len(v.RTicks) != n+1 {
		t.Errorf("axes: left %v, right %v", v.LTicks, v.RTicks)
	}

	// A single point sits in the middle; a sweep within a factor of two
	// is linear.
	one, _ := layout(Chart{Points: []Point{{Concurrency: 8, OpsPerSec: 1, P99Ms: 1}}})
	if one.XTicks[0].Pos != (plotLeft+plotRight)/2 {
		t.Errorf("single point at x=%v", one.XTicks[0].Pos)
	}
	lin, _ := layout(Chart{Points: []Point{{Concurrency: 10, OpsPerSec: 1}, {Concurrency: 15, OpsPerSec: 2}, {Concurrency: 20, OpsPerSec: 3}}})
	if d1, d2 := lin.XTicks[1].Pos-lin.XTicks[0].Pos, lin.XTicks[2].Pos-lin.XTicks[1].Pos; math.Abs(d1-d2) > 0.2 {
		t.Errorf("10, 15, 20 spaced %v and %v", d1, d2)
	}

	if _, err := layout(Chart{}); err == nil {
		t.Error("no points accepted")
	}
	if _, err := layout(Chart{Points: []Point{{Concurrency: 1, OpsPerSec: math.NaN()}}}); err == nil {
		t.Error("NaN accepted")
	}
}

func TestNiceAxes(t *testing.T) {
	for _, c := range []struct {
		left, right  float64
		steps        int
		lstep, rstep float64
	}{
		{8012.5, 40.25, 5, 2000, 10}, // 10,000 and 50
		{11199, 6.55, 5, 2500, 2},    // 12,500 and 10: four steps would need 20,000 on the left
		{4061, 9.8, 5, 1000, 2.5},    // 5,000 and 12.5
		{5500, 5.5, 6, 1000, 1},      // 6,000 and 6, where five steps would need 10,000 and 10
		{0, 0, 5, 1, 1},
		{0.3, 0.3, 4, 0.1, 0.1}, // 0.4, where five steps would need 0.5
	} {
		n, l, r := niceAxes(c.left, c.right)
		if n != c.steps || math.Abs(l-c.lstep) > 1e-9 || math.Abs(r-c.rstep) > 1e-9 {
			t.Errorf("niceAxes(%v, %v) = %d steps of %v and %v; want %d of %v and %v", c.left, c.right, n, l, r, c.steps, c.lstep, c.rstep)
		}
		if float64(n)*l < c.left*headroom || float64(n)*r < c.right*headroom {
			t.Errorf("niceAxes(%v, %v): %d steps of %v and %v do not hold the points", c.left, c.right, n, l, r)
		}
	}
}

// TestLabelsApart: the two labels of a concurrency never overlap, and
// stay inside the plot, wherever the markers are.
func TestLabelsApart(t *testing.T) {
	for thru := 0.0; thru <= 1; thru += 0.01 {
		for p99 := 0.0; p99 <= 1; p99 += 0.01 {
			// Markers at most 1/headroom of the way up, as niceAxes leaves them.
			ty := plotBottom - thru/headroom*(plotBottom-plotTop)
			py := plotBottom - p99/headroom*(plotBottom-plotTop)
			tl, pl := placeLabels(ty, py)
			if math.Abs(tl-pl) < labelLine {
				t.Fatalf("markers at %v and %v: labels at %v and %v overlap", ty, py, tl, pl)
			}
			for _, l := range []float64{tl, pl} {
				if l < plotTop+labelLine || l > plotBottom-4 {
					t.Fatalf("markers at %v and %v: a label at %v leaves the plot", ty, py, l)
				}
			}
		}
	}
}
