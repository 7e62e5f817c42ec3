package kvbench

import (
	"errors"
	"fmt"
	"io"

	"github.com/kvnode/kvnode/bench/kvbench/svgplot"
)

// WritePlot draws a sweep's results (throughput and p99 against
// concurrency) as an SVG document.
func WritePlot(w io.Writer, results []Result) error {
	if len(results) == 0 {
		return errors.New("plot: no results")
	}
	r := results[0]
	mode := "closed loop"
	if r.Mode == "fixed-rate" {
		mode = fmt.Sprintf("fixed rate %s ops/s", Thousands(r.TargetRate))
	}
	c := svgplot.Chart{
		Title:    fmt.Sprintf("kvbench %s on %s", r.Workload, r.where()),
		Subtitle: fmt.Sprintf("%s, %s, %d endpoint(s), %.0f s per point", mode, r.dataDesc(), r.Endpoints, r.Seconds),
	}
	if r.Label != "" {
		c.Title += " [" + r.Label + "]"
	}
	for _, r := range results {
		c.Points = append(c.Points, svgplot.Point{Concurrency: r.Concurrency, OpsPerSec: r.OpsPerSec, P99Ms: r.Latency.P99})
	}
	return svgplot.Write(w, c)
}
