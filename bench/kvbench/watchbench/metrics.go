package watchbench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Memory is the watched member's memory (and what holds it) at one
// moment, from the Go and process collectors of its /metrics
// (docs/metrics.md), with the CPU time it has used so far: the tool runs
// on the member's machine, and what each took of it belongs beside the
// latencies.
type Memory struct {
	HeapInuseBytes float64 `json:"heap_inuse_bytes"` // go_memstats_heap_inuse_bytes
	ResidentBytes  float64 `json:"resident_bytes"`   // process_resident_memory_bytes
	Goroutines     float64 `json:"goroutines"`       // go_goroutines
	OpenFDs        float64 `json:"open_fds"`         // process_open_fds
	CPUSeconds     float64 `json:"cpu_seconds"`      // process_cpu_seconds_total
}

// metricFields names the metrics Memory reads.
func (m *Memory) metricFields() map[string]*float64 {
	return map[string]*float64{
		"go_memstats_heap_inuse_bytes":  &m.HeapInuseBytes,
		"process_resident_memory_bytes": &m.ResidentBytes,
		"go_goroutines":                 &m.Goroutines,
		"process_open_fds":              &m.OpenFDs,
		"process_cpu_seconds_total":     &m.CPUSeconds,
	}
}

// peak keeps the larger of each field.
func (m *Memory) peak(o Memory) {
	m.HeapInuseBytes = max(m.HeapInuseBytes, o.HeapInuseBytes)
	m.ResidentBytes = max(m.ResidentBytes, o.ResidentBytes)
	m.Goroutines = max(m.Goroutines, o.Goroutines)
	m.OpenFDs = max(m.OpenFDs, o.OpenFDs)
	m.CPUSeconds = max(m.CPUSeconds, o.CPUSeconds)
}

// scrapeMemory reads the member's /metrics (Prometheus text format) for
// the metrics of Memory; a metric the member does not expose stays 0.
func scrapeMemory(ctx context.Context, hc *http.Client, base, auth string) (Memory, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
	if err != nil {
		return Memory{}, err
	}
	req.Header.Set("Accept", "text/plain")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Memory{}, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Memory{}, fmt.Errorf("metrics: GET /metrics answered %d", resp.StatusCode)
	}
	var m Memory
	fields := m.metricFields()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if dst := fields[name]; ok && dst != nil {
			if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
				*dst = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Memory{}, fmt.Errorf("metrics: %w", err)
	}
	return m, nil
}
