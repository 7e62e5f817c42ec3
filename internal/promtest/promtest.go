// Package promtest is what tests share to check metrics: promtool's lint
// of an exposition (Check) and the samples of one, parsed (Parse).
//
// promtool comes with Debian's prometheus package; .ci/run installs it. A
// test that needs it and cannot find it fails with that reason: it is
// never skipped. KVNODE_PROMTOOL names another binary.
//
// Only tests import it (imports_test.go checks this).
package promtest

import (
	"bytes"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Promtool is the path of promtool, or fails t saying how to install it.
func Promtool(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("KVNODE_PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not installed, so the metrics cannot be checked (Debian: apt-get install -y prometheus; or set KVNODE_PROMTOOL): %v", err)
	}
	return p
}

// Check runs `promtool check metrics` on an exposition in the text format
// and fails t with every problem it reports.
func Check(t testing.TB, exposition string) {
	t.Helper()
	cmd := exec.Command(Promtool(t), "check", "metrics")
	cmd.Stdin = strings.NewReader(exposition)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || strings.TrimSpace(out.String()) != "" {
		t.Errorf("promtool check metrics: %v\n%s", err, out.String())
	}
}

// Sample is one value of an exposition: a counter's, a gauge's, a
// histogram's _count, _sum or _bucket (with its le label), or a summary's
// _count, _sum or quantile (with its quantile label).
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Samples are an exposition's values.
type Samples []Sample

// Parse reads an exposition in the text format, failing t if it does not
// parse.
func Parse(t testing.TB, exposition string) Samples {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(exposition))
	if err != nil {
		t.Fatalf("parse the exposition: %v\n%s", err, exposition)
	}
	var out Samples
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out = append(out, Sample{name, labels, m.GetCounter().GetValue()})
			case dto.MetricType_GAUGE:
				out = append(out, Sample{name, labels, m.GetGauge().GetValue()})
			case dto.MetricType_UNTYPED:
				out = append(out, Sample{name, labels, m.GetUntyped().GetValue()})
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out = append(out, Sample{name + "_count", labels, float64(h.GetSampleCount())}, Sample{name + "_sum", labels, h.GetSampleSum()})
				for _, b := range h.GetBucket() {
					bl := map[string]string{"le": strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)}
					for k, v := range labels {
						bl[k] = v
					}
					out = append(out, Sample{name + "_bucket", bl, float64(b.GetCumulativeCount())})
				}
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				out = append(out, Sample{name + "_count", labels, float64(s.GetSampleCount())}, Sample{name + "_sum", labels, s.GetSampleSum()})
				for _, q := range s.GetQuantile() {
					ql := map[string]string{"quantile": strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64)}
					for k, v := range labels {
						ql[k] = v
					}
					out = append(out, Sample{name, ql, q.GetValue()})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Find returns the samples named name whose labels include match.
func (s Samples) Find(name string, match map[string]string) Samples {
	var out Samples
	for _, x := range s {
		if x.Name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if x.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, x)
		}
	}
	return out
}

// Get is the value of the one sample named name with labels including
// match; found is false unless exactly one matches.
func (s Samples) Get(name string, match map[string]string) (v float64, found bool) {
	f := s.Find(name, match)
	if len(f) != 1 {
		return 0, false
	}
	return f[0].Value, true
}

// Sum adds the values of the samples named name whose labels include match.
func (s Samples) Sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, x := range s.Find(name, match) {
		total += x.Value
	}
	return total
}
