package svgplot

import (
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/template"
)

// Point is one point of a concurrency sweep.
type Point struct {
	Concurrency int
	OpsPerSec   float64
	P99Ms       float64
}

// Chart is what to draw: a title, a subtitle (the run's settings) and the
// points, in any order.
type Chart struct {
	Title, Subtitle string
	Points          []Point
}

// The canvas and the plot area inside it, in SVG user units (pixels).
const (
	width        = 760
	height       = 440
	marginLeft   = 80
	marginRight  = 80
	marginTop    = 70
	marginBottom = 60
	plotLeft     = marginLeft
	plotRight    = width - marginRight
	plotTop      = marginTop
	plotBottom   = height - marginBottom
	headroom     = 1.08 // the axis reaches at least this much above the highest point
	throughputFg = "#1f77b4"
	p99Fg        = "#d62728"
)

// tick is a labelled position on an axis.
type tick struct {
	Pos   float64
	Label string
}

// marker is a drawn point and its value's label, written at LabelY.
type marker struct {
	X, Y, LabelY float64
	Label        string
}

// view is the template's data: every position computed.
type view struct {
	W, H                       int
	Left, Right, Top, Bottom   float64
	Title, Subtitle            string
	XTicks, LTicks, RTicks     []tick
	Thru, P99                  []marker
	ThruLine, P99Line          string
	ThruColor, P99Color        string
	XLabel, LLabel, RLabel     string
	MidX, MidY, LegendY        float64
	LabelLeftX, LabelRightX    float64
	LegendThruX, LegendP99X    float64
	TitleY, SubtitleY, XLabelY float64
}

var chart = template.Must(template.New("chart").Funcs(template.FuncMap{
	"esc": html.EscapeString,
	"add": func(a, b float64) float64 { return a + b },
	"sub": func(a, b float64) float64 { return a - b },
}).Parse(
	`<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" font-family="Helvetica, Arial, sans-serif" font-size="12">
<rect x="0" y="0" width="{{.W}}" height="{{.H}}" fill="#ffffff"/>
<text x="{{.MidX}}" y="{{.TitleY}}" text-anchor="middle" font-size="16" font-weight="bold">{{esc .Title}}</text>
<text x="{{.MidX}}" y="{{.SubtitleY}}" text-anchor="middle" fill="#555555">{{esc .Subtitle}}</text>
<g stroke="#e0e0e0" stroke-width="1">
{{- range .LTicks}}
<line x1="{{$.Left}}" y1="{{.Pos}}" x2="{{$.Right}}" y2="{{.Pos}}"/>
{{- end}}
{{- range .XTicks}}
<line x1="{{.Pos}}" y1="{{$.Top}}" x2="{{.Pos}}" y2="{{$.Bottom}}"/>
{{- end}}
</g>
<rect x="{{.Left}}" y="{{.Top}}" width="{{sub .Right .Left}}" height="{{sub .Bottom .Top}}" fill="none" stroke="#333333"/>
{{- range .XTicks}}
<text x="{{.Pos}}" y="{{add $.Bottom 18}}" text-anchor="middle">{{esc .Label}}</text>
{{- end}}
{{- range .LTicks}}
<text x="{{sub $.Left 8}}" y="{{add .Pos 4}}" text-anchor="end" fill="{{$.ThruColor}}">{{esc .Label}}</text>
{{- end}}
{{- range .RTicks}}
<text x="{{add $.Right 8}}" y="{{add .Pos 4}}" text-anchor="start" fill="{{$.P99Color}}">{{esc .Label}}</text>
{{- end}}
<text x="{{.MidX}}" y="{{.XLabelY}}" text-anchor="middle">{{esc .XLabel}}</text>
<text x="{{.LabelLeftX}}" y="{{.MidY}}" text-anchor="middle" fill="{{.ThruColor}}" transform="rotate(-90 {{.LabelLeftX}} {{.MidY}})">{{esc .LLabel}}</text>
<text x="{{.LabelRightX}}" y="{{.MidY}}" text-anchor="middle" fill="{{.P99Color}}" transform="rotate(90 {{.LabelRightX}} {{.MidY}})">{{esc .RLabel}}</text>
<polyline points="{{.ThruLine}}" fill="none" stroke="{{.ThruColor}}" stroke-width="2.5"/>
<polyline points="{{.P99Line}}" fill="none" stroke="{{.P99Color}}" stroke-width="2.5" stroke-dasharray="7 4"/>
{{- range .Thru}}
<circle cx="{{.X}}" cy="{{.Y}}" r="4.5" fill="{{$.ThruColor}}"/>
<text x="{{.X}}" y="{{.LabelY}}" text-anchor="middle" font-size="11" fill="{{$.ThruColor}}" stroke="#ffffff" stroke-width="3" paint-order="stroke">{{esc .Label}}</text>
{{- end}}
{{- range .P99}}
<rect x="{{sub .X 4}}" y="{{sub .Y 4}}" width="8" height="8" fill="{{$.P99Color}}"/>
<text x="{{.X}}" y="{{.LabelY}}" text-anchor="middle" font-size="11" fill="{{$.P99Color}}" stroke="#ffffff" stroke-width="3" paint-order="stroke">{{esc .Label}}</text>
{{- end}}
<line x1="{{.LegendThruX}}" y1="{{.LegendY}}" x2="{{add .LegendThruX 24}}" y2="{{.LegendY}}" stroke="{{.ThruColor}}" stroke-width="2.5"/>
<circle cx="{{add .LegendThruX 12}}" cy="{{.LegendY}}" r="4.5" fill="{{.ThruColor}}"/>
<text x="{{add .LegendThruX 30}}" y="{{add .LegendY 4}}">throughput (ops/s, left)</text>
<line x1="{{.LegendP99X}}" y1="{{.LegendY}}" x2="{{add .LegendP99X 24}}" y2="{{.LegendY}}" stroke="{{.P99Color}}" stroke-width="2.5" stroke-dasharray="7 4"/>
<rect x="{{add .LegendP99X 8}}" y="{{sub .LegendY 4}}" width="8" height="8" fill="{{.P99Color}}"/>
<text x="{{add .LegendP99X 30}}" y="{{add .LegendY 4}}">p99 latency (ms, right)</text>
</svg>
`))

// Write draws c as an SVG document: throughput (left axis) and p99
// latency (right axis) against concurrency (a log₂ axis when the sweep
// spans more than a factor of two, as 1, 16, 64, 256 do).
func Write(w io.Writer, c Chart) error {
	v, err := layout(c)
	if err != nil {
		return err
	}
	return chart.Execute(w, v)
}

func layout(c Chart) (*view, error) {
	if len(c.Points) == 0 {
		return nil, errors.New("plot: no points")
	}
	pts := append([]Point(nil), c.Points...)
	sort.Slice(pts, func(i, j int) bool { return pts[i].Concurrency < pts[j].Concurrency })
	for _, p := range pts {
		if p.Concurrency < 1 || bad(p.OpsPerSec) || bad(p.P99Ms) {
			return nil, fmt.Errorf("plot: point %+v is out of range", p)
		}
	}
	v := &view{
		W: width, H: height, Left: plotLeft, Right: plotRight, Top: plotTop, Bottom: plotBottom,
		Title: c.Title, Subtitle: c.Subtitle, ThruColor: throughputFg, P99Color: p99Fg,
		XLabel: "concurrency (clients in flight)", LLabel: "throughput (ops/s)", RLabel: "p99 latency (ms)",
		MidX: (plotLeft + plotRight) / 2, MidY: (plotTop + plotBottom) / 2,
		TitleY: 24, SubtitleY: 42, LegendY: 58, XLabelY: height - 16,
		LabelLeftX: 18, LabelRightX: width - 18,
		LegendThruX: plotLeft + 40, LegendP99X: (plotLeft+plotRight)/2 + 40,
	}
	xOf := xScale(pts)
	steps, thruStep, p99Step := niceAxes(maxOf(pts, func(p Point) float64 { return p.OpsPerSec }), maxOf(pts, func(p Point) float64 { return p.P99Ms }))
	thruMax, p99Max := thruStep*float64(steps), p99Step*float64(steps)
	yOf := func(val, top float64) float64 { return plotBottom - val/top*(plotBottom-plotTop) }
	for i := 0; i <= steps; i++ {
		tv := thruStep * float64(i)
		pv := p99Step * float64(i)
		v.LTicks = append(v.LTicks, tick{Pos: round(yOf(tv, thruMax)), Label: number(tv)})
		v.RTicks = append(v.RTicks, tick{Pos: round(yOf(pv, p99Max)), Label: number(pv)})
	}
	var thru, p99 []string
	for _, p := range pts {
		x := round(xOf(p.Concurrency))
		v.XTicks = append(v.XTicks, tick{Pos: x, Label: strconv.Itoa(p.Concurrency)})
		t := marker{X: x, Y: round(yOf(p.OpsPerSec, thruMax)), Label: number(p.OpsPerSec)}
		l := marker{X: x, Y: round(yOf(p.P99Ms, p99Max)), Label: number(p.P99Ms)}
		t.LabelY, l.LabelY = placeLabels(t.Y, l.Y)
		v.Thru, v.P99 = append(v.Thru, t), append(v.P99, l)
		thru = append(thru, fmt.Sprintf("%g,%g", t.X, t.Y))
		p99 = append(p99, fmt.Sprintf("%g,%g", l.X, l.Y))
	}
	v.ThruLine, v.P99Line = strings.Join(thru, " "), strings.Join(p99, " ")
	return v, nil
}

// Label offsets: a label above its marker sits on this baseline above
// it; one below, on this baseline below it.
const (
	labelAbove = 9
	labelBelow = 17
	labelLine  = 13 // the height of a label's line
)

// placeLabels says where the two values of one concurrency are written:
// the upper marker's label above it, the lower's below it, so that they
// move apart; when the lower one has no room below (near the x axis) its
// label goes above, stacked over the upper's label when the two are close.
func placeLabels(thruY, p99Y float64) (thruLabel, p99Label float64) {
	upper, lower := min(thruY, p99Y), max(thruY, p99Y)
	upperLabel, lowerLabel := upper-labelAbove, lower+labelBelow
	if lowerLabel > plotBottom-4 {
		lowerLabel = lower - labelAbove
		if lowerLabel-upperLabel < labelLine {
			lowerLabel = upperLabel - labelLine
		}
	}
	if thruY <= p99Y {
		return upperLabel, lowerLabel
	}
	return lowerLabel, upperLabel
}

func bad(f float64) bool { return f < 0 || math.IsNaN(f) || math.IsInf(f, 0) }

// xScale places concurrencies across the plot, with a little room at the
// edges: on a log₂ scale when the sweep spans more than a factor of two,
// else linearly; a single point in the middle.
func xScale(pts []Point) func(int) float64 {
	const pad = 40
	lo, hi := pts[0].Concurrency, pts[len(pts)-1].Concurrency
	left, right := float64(plotLeft+pad), float64(plotRight-pad)
	if lo == hi {
		return func(int) float64 { return (left + right) / 2 }
	}
	f := func(c int) float64 { return float64(c) }
	if hi > 2*lo {
		f = func(c int) float64 { return math.Log2(float64(c)) }
	}
	return func(c int) float64 { return left + (f(c)-f(lo))/(f(hi)-f(lo))*(right-left) }
}

func maxOf(pts []Point, f func(Point) float64) float64 {
	m := 0.0
	for _, p := range pts {
		m = max(m, f(p))
	}
	return m
}

// niceStep is the smallest step of 1, 2, 2.5 or 5 × 10^k with which n
// steps from 0 reach m × headroom.
func niceStep(m float64, n int) float64 {
	if m <= 0 {
		return 1
	}
	raw := m * headroom / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, f := range []float64{1, 2, 2.5, 5} {
		if f*mag >= raw {
			return f * mag
		}
	}
	return 10 * mag
}

// niceAxes chooses the two axes' steps, and their common number of steps
// (4 to 6, so that both sets of ticks sit on the grid lines), wasting the
// least height above the points; 5 steps when it is a tie.
func niceAxes(left, right float64) (steps int, leftStep, rightStep float64) {
	best := math.Inf(1)
	for _, n := range []int{5, 4, 6} {
		l, r := niceStep(left, n), niceStep(right, n)
		waste := l*float64(n)/max(left, 1e-9) + r*float64(n)/max(right, 1e-9)
		if left <= 0 || right <= 0 {
			waste = float64(n % 5) // nothing to fit: five steps
		}
		if waste < best {
			best, steps, leftStep, rightStep = waste, n, l, r
		}
	}
	return steps, leftStep, rightStep
}

// number prints a value for a label: thousands separated, decimals only
// where they matter.
func number(f float64) string {
	switch {
	case f == 0:
		return "0"
	case f < 10:
		return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
	case f < 100:
		return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64)
	}
	s := strconv.FormatFloat(math.Round(f), 'f', 0, 64)
	var b strings.Builder
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func round(f float64) float64 { return math.Round(f*10) / 10 }
