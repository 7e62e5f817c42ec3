package nodeflags

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
)

// writeConfig writes a config file into a test's directory.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kvnode.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigFilePrecedence: a flag beats its variable, which beats the
// file, which beats the default; a key the file does not set keeps the
// default.
func TestConfigFilePrecedence(t *testing.T) {
	path := writeConfig(t, `
# every kind of flag value
name: from-file
http-addr: 127.0.0.1:9001
internal-addr: 127.0.0.1:9002
bootstrap-expect: 3
join: [a:7946, b:7946]
regions:
  - orders:PARTITION
  - customers
groups: east,ssd
dead-member-timeout: 1h
max-body-size: 2MiB
log-level: warn
`)
	env := []string{"KVNODE_HTTP_ADDR=127.0.0.1:9101", "KVNODE_BOOTSTRAP_EXPECT=5"}
	cfg, _, err := Parse([]string{"--config", path, "--bootstrap-expect", "7"}, env, io.Discard)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"flag over env over file", cfg.BootstrapExpect, 7},
		{"env over file", cfg.HTTPAddr, "127.0.0.1:9101"},
		{"file over default", cfg.InternalAddr, "127.0.0.1:9002"},
		{"file name", cfg.Name, "from-file"},
		{"file duration", cfg.DeadMemberTimeout, time.Hour},
		{"file size", cfg.MaxBodySize, int64(2 << 20)},
		{"file level", cfg.LogLevel, "warn"},
		{"default kept", cfg.GossipAddr, ":7946"},
		{"default kept", cfg.PartitionGroups, 4},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
	if !slices.Equal(cfg.Join, []string{"a:7946", "b:7946"}) {
		t.Errorf("join from a YAML list = %q", cfg.Join)
	}
	if !slices.Equal(cfg.Groups, []string{"east", "ssd"}) {
		t.Errorf("groups from a comma list = %q", cfg.Groups)
	}
	want := []region.Info{{Name: "orders", Kind: region.Partition}, {Name: "customers", Kind: region.Replicate}}
	if !reflect.DeepEqual(cfg.Regions, want) {
		t.Errorf("regions = %v, want %v", cfg.Regions, want)
	}
}

// TestConfigFileFromEnv: KVNODE_CONFIG names the file as --config does,
// and --config wins over it.
func TestConfigFileFromEnv(t *testing.T) {
	a := writeConfig(t, "name: a\n")
	b := writeConfig(t, "name: b\n")
	cfg, unknown, err := Parse(nil, []string{"KVNODE_CONFIG=" + a}, io.Discard)
	if err != nil || cfg.Name != "a" || len(unknown) != 0 {
		t.Fatalf("KVNODE_CONFIG: name %q, unknown %v, err %v; want a, none, nil", cfg.Name, unknown, err)
	}
	cfg, _, err = Parse([]string{"--config=" + b}, []string{"KVNODE_CONFIG=" + a}, io.Discard)
	if err != nil || cfg.Name != "b" {
		t.Fatalf("--config over KVNODE_CONFIG: name %q, err %v; want b", cfg.Name, err)
	}
}

func TestConfigFileRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"unknown key", "name: n1\nhttp-adr: :9000\n", []string{`unknown key "http-adr"`, ":2"}},
		{"key twice", "name: a\nname: b\n", []string{`"name" is given twice`, ":2"}},
		{"bad value", "bootstrap-expect: many\n", []string{"bootstrap-expect", ":1"}},
		{"invalid config", "bootstrap-expect: 0\n", []string{"bootstrap-expect"}},
		{"mapping value", "join: {a: 1}\n", []string{"join", "not a mapping"}},
		{"not a mapping", "- a\n- b\n", []string{"want a mapping"}},
		{"config inside", "config: other.yaml\n", []string{`"config" cannot be set`}},
		{"not YAML", "name: [unclosed\n", []string{"config file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.text)
			_, _, err := Parse([]string{"--config", path}, nil, io.Discard)
			if err == nil {
				t.Fatalf("Parse accepted %q", tc.text)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	if _, _, err := Parse([]string{"--config", filepath.Join(t.TempDir(), "absent.yaml")}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "absent.yaml") {
		t.Errorf("a missing config file: error %v, want one naming it", err)
	}
	// An empty file sets nothing.
	if cfg, _, err := Parse([]string{"--config", writeConfig(t, "")}, nil, io.Discard); err != nil || cfg.HTTPAddr != ":8080" {
		t.Errorf("empty file: http addr %q, err %v", cfg.HTTPAddr, err)
	}
}
