package cluster

import (
	"strings"
	"testing"
)

func TestNewRejectsBadConfig(t *testing.T) {
	tests := map[string]struct {
		cfg  Config
		want string // in the error
	}{
		"no name":          {Config{BindAddr: "127.0.0.1:0"}, "name"},
		"bind not ip:port": {Config{Name: "a", BindAddr: "127.0.0.1"}, "bind address"},
		"bind hostname":    {Config{Name: "a", BindAddr: "localhost:0"}, "must be an IP"},
		"bind bad port":    {Config{Name: "a", BindAddr: "127.0.0.1:99999"}, "bad port"},
		"bind v6 any":      {Config{Name: "a", BindAddr: "[::]:0"}, "advertise address"},
		"advertise":        {Config{Name: "a", BindAddr: "127.0.0.1:0", AdvertiseAddr: "node-a:7946"}, "advertise address"},
		"join":             {Config{Name: "a", BindAddr: "127.0.0.1:0", Join: []string{"host:notaport"}}, "join address"},
		"profile":          {Config{Name: "a", BindAddr: "127.0.0.1:0", Profile: "wan"}, "profile"},
		"negative expect":  {Config{Name: "a", BindAddr: "127.0.0.1:0", Meta: Meta{BootstrapExpect: -1}}, "bootstrap-expect"},
		"meta too large": {Config{Name: "a", BindAddr: "127.0.0.1:0",
			Meta: Meta{RESTURL: "http://10.0.0.1:8080", Groups: []string{strings.Repeat("g", 300), strings.Repeat("h", 300)}}}, "512"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := New(tt.cfg)
			if err == nil {
				_ = c.Shutdown()
				t.Fatalf("New: got a cluster, want an error mentioning %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: got error %q, want it to mention %q", err, tt.want)
			}
		})
	}
}
