package kvbench

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	ok := Default()
	if err := ok.Validate(); err != nil {
		t.Fatalf("the default configuration: %v", err)
	}
	cases := []struct {
		name string
		edit func(*Config)
		want string // in the error; "" for none
	}{
		{"trailing slash trimmed", func(c *Config) { c.Endpoints = []string{"http://127.0.0.1:8080/"} }, ""},
		{"localhost", func(c *Config) { c.Endpoints = []string{"https://localhost:8443"} }, ""},
		{"another machine", func(c *Config) { c.Endpoints = []string{"http://10.0.0.7:8080"} }, "allow-nonloopback"},
		{"another machine, allowed", func(c *Config) { c.Endpoints, c.AllowNonLoopback = []string{"http://10.0.0.7:8080"}, true }, ""},
		{"not a URL", func(c *Config) { c.Endpoints = []string{"127.0.0.1:8080"} }, "want http"},
		{"a path", func(c *Config) { c.Endpoints = []string{"http://127.0.0.1:8080/kv/v1"} }, "want http"},
		{"no endpoints", func(c *Config) { c.Endpoints = nil }, "no endpoints"},
		{"unknown workload", func(c *Config) { c.Workload = "scan" }, "workload"},
		{"unknown route", func(c *Config) { c.Route = "random" }, "route"},
		{"user without password", func(c *Config) { c.User = "u" }, "credentials"},
		{"cert without key", func(c *Config) { c.Cert = "c.pem" }, "key go together"},
		{"batch of one", func(c *Config) { c.Workload, c.Batch = MultiPut, 1 }, "batch"},
		{"batch over the keys", func(c *Config) { c.Workload, c.Batch, c.Keys = MultiPut, 20, 10 }, "batch"},
		{"batch of a put is ignored", func(c *Config) { c.Batch = 0 }, ""},
		{"zipf s of 1", func(c *Config) { c.Zipf, c.ZipfS = true, 1 }, "zipf"},
		{"no keys", func(c *Config) { c.Keys = 0 }, "keys"},
		{"prefix with a comma", func(c *Config) { c.KeyPrefix = "a,b" }, "prefix"},
		{"concurrency 0", func(c *Config) { c.Concurrency = []int{1, 0} }, "concurrency"},
		{"concurrency too high", func(c *Config) { c.Concurrency = []int{MaxConcurrency + 1} }, "concurrency"},
		{"negative rate", func(c *Config) { c.Rate = -1 }, "rate"},
		{"unbounded duration", func(c *Config) { c.Duration = MaxDuration }, ""},
		{"too long", func(c *Config) { c.Duration, c.Warmup = MaxDuration, time.Second }, "duration"},
		{"no duration", func(c *Config) { c.Duration = 0 }, "duration"},
		{"no ops", func(c *Config) { c.MaxOps = 0 }, "ops"},
		{"read percent", func(c *Config) { c.ReadPercent = 101 }, "read percent"},
		{"empty query", func(c *Config) { c.Workload, c.Query = Query, " " }, "query"},
		{"region type", func(c *Config) { c.CreateRegion = "LOCAL" }, "REPLICATE or PARTITION"},
	}
	for _, c := range cases {
		cfg := Default()
		c.edit(&cfg)
		err := cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one about %q", c.name, err, c.want)
		}
	}
	cfg := Default()
	cfg.Endpoints = []string{" http://127.0.0.1:8080/ "}
	if err := cfg.Validate(); err != nil || cfg.Endpoints[0] != "http://127.0.0.1:8080" {
		t.Errorf("endpoint cleaned to %q, %v", cfg.Endpoints[0], err)
	}
}

func TestParseFlags(t *testing.T) {
	if got, err := ParseConcurrency("1, 16,64,256"); err != nil || !slices.Equal(got, []int{1, 16, 64, 256}) {
		t.Errorf("ParseConcurrency: %v, %v", got, err)
	}
	for _, bad := range []string{"", "x", "1,,a"} {
		if _, err := ParseConcurrency(bad); err == nil {
			t.Errorf("ParseConcurrency(%q) accepted", bad)
		}
	}
	for in, want := range map[string][2]string{
		"orders:PARTITION": {"orders", "PARTITION"}, "orders:replicate": {"orders", "REPLICATE"}, "orders": {"orders", "REPLICATE"},
	} {
		if n, k, err := ParseRegionSpec(in); err != nil || n != want[0] || k != want[1] {
			t.Errorf("ParseRegionSpec(%q) = %q, %q, %v", in, n, k, err)
		}
	}
	for _, bad := range []string{":PARTITION", "orders:LOCAL"} {
		if _, _, err := ParseRegionSpec(bad); err == nil {
			t.Errorf("ParseRegionSpec(%q) accepted", bad)
		}
	}
}
