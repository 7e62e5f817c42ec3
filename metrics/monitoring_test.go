package metrics_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kvnode/kvnode/internal/promtest"
)

// The dashboard and the alert rules of deploy/monitoring name metrics by
// hand: these tests keep them to the metrics a node exposes, and the
// dashboard's queries to valid PromQL. (promtool test rules, run by make
// test-monitoring, tests what the alerts do.)

const monitoring = "../deploy/monitoring"

// metricName finds the metric names in a PromQL expression.
var metricName = regexp.MustCompile(`\b(?:kvnode|go|process)_[a-z0-9_]+\b`)

// exposedNames are the series names a fed registry exposes, histograms'
// and summaries' _bucket, _count and _sum included.
func exposedNames(t *testing.T) map[string]bool {
	names := map[string]bool{}
	for _, s := range promtest.Parse(t, scrape(t, fed(t))) {
		names[s.Name] = true
	}
	return names
}

// dashboardQueries are the PromQL expressions of the dashboard's panels
// and variables, by panel title.
func dashboardQueries(t *testing.T) map[string][]string {
	b, err := os.ReadFile(filepath.Join(monitoring, "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			ID      int    `json:"id"`
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	out := map[string][]string{}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out[p.Title] = append(out[p.Title], tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := strings.CutPrefix(v.Definition, "label_values("); ok {
			name, _, _ := strings.Cut(q, ",")
			name, _, _ = strings.Cut(name, "{")
			out["variable "+v.Name] = append(out["variable "+v.Name], name)
		}
	}
	if d.UID == "" || len(out) < 30 {
		t.Errorf("dashboard uid %q, %d panels with queries", d.UID, len(out))
	}
	return out
}

// alertQueries are the expressions of alerts.yml, by alert.
func alertQueries(t *testing.T) map[string]string {
	b, err := os.ReadFile(filepath.Join(monitoring, "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	out := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = r.Expr
		}
	}
	return out
}

// TestMonitoringNamesExposedMetrics: every metric the dashboard and the
// alerts query is one a node exposes.
func TestMonitoringNamesExposedMetrics(t *testing.T) {
	exposed := exposedNames(t)
	check := func(where, expr string) {
		for _, name := range metricName.FindAllString(expr, -1) {
			if !exposed[name] {
				t.Errorf("%s queries %s, which no node exposes", where, name)
			}
		}
	}
	for title, exprs := range dashboardQueries(t) {
		for _, e := range exprs {
			check("dashboard panel "+title, e)
		}
	}
	alerts := alertQueries(t)
	for _, want := range []string{"KvnodeGroupWithoutLeader", "KvnodeLeaderFlapping", "KvnodeHighCommitLatency", "KvnodeMemberDown",
		"KvnodeDataDirNearlyFull", "KvnodeSnapshotFailing"} {
		if alerts[want] == "" {
			t.Errorf("alerts.yml has no %s", want)
		}
	}
	for name, e := range alerts {
		check("alert "+name, e)
	}
}

// TestDashboardQueriesParse: every query of the dashboard, with its
// variables filled in, is PromQL promtool accepts (as recording rules).
func TestDashboardQueriesParse(t *testing.T) {
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	fill := strings.NewReplacer("$__rate_interval", "1m", "$job", ".*", "$instance", ".*")
	i := 0
	for _, exprs := range dashboardQueries(t) {
		for _, e := range exprs {
			if !strings.Contains(e, "(") && !strings.Contains(e, "{") {
				continue // a variable's metric name
			}
			q, err := json.Marshal(fill.Replace(e)) // a JSON string is a YAML string
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&rules, "      - record: dashboard:q%d\n        expr: %s\n", i, q)
			i++
		}
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtest.Promtool(t), "check", "rules", path).CombinedOutput()
	if err != nil {
		t.Errorf("promtool check rules on the dashboard's queries: %v\n%s\n%s", err, out, rules.String())
	}
}
