// Package svgplot draws a kvbench concurrency sweep as an SVG document:
// throughput on the left axis and p99 latency on the right, against
// concurrency. It owns the chart's layout (scales, ticks, labels) and its
// SVG, written with text/template: a chart of two lines needs no plotting
// library, and gonum/plot would bring fonts, a PDF and a LaTeX renderer
// into kvnode's module for it.
//
// It is pure (points in, a document out) and imports nothing of kvnode
// (imports_test.go checks this).
package svgplot
