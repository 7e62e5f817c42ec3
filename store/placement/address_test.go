package placement

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
)

// applyFixes runs NextAddressFix to a fixpoint the way the reconcile loops
// do (one change at a time), checking after every change that no two
// servers share an address, as Raft would insist.
func applyFixes(t *testing.T, conf raft.Configuration, current map[string]string, joining []string) (raft.Configuration, int) {
	t.Helper()
	lookup := func(id string) (string, bool) { a, ok := current[id]; return a, ok }
	steps := 0
	for {
		fix, ok := NextAddressFix(conf, lookup, joining)
		if !ok {
			return conf, steps
		}
		steps++
		if steps > 3*len(conf.Servers)+len(joining) {
			t.Fatalf("no fixpoint after %d changes: %+v", steps, conf.Servers)
		}
		seen := map[raft.ServerAddress]raft.ServerID{}
		for i, srv := range conf.Servers {
			if srv.ID == fix.Server.ID {
				conf.Servers[i].Address = fix.To
			}
		}
		for _, srv := range conf.Servers {
			if other, dup := seen[srv.Address]; dup {
				t.Fatalf("change %+v gives %s and %s the same address %s", fix, other, srv.ID, srv.Address)
			}
			seen[srv.Address] = srv.ID
		}
	}
}

func servers(addrs ...string) raft.Configuration {
	var c raft.Configuration
	for i, a := range addrs {
		c.Servers = append(c.Servers, raft.Server{ID: raft.ServerID(fmt.Sprintf("n%d", i)), Address: raft.ServerAddress(a), Suffrage: raft.Voter})
	}
	return c
}

func TestNextAddressFix(t *testing.T) {
	cases := []struct {
		name    string
		conf    raft.Configuration
		current map[string]string
		joining []string
		want    []string // final addresses of n0, n1, ...
	}{
		{"nothing moved", servers("a", "b", "c"), map[string]string{"n0": "a", "n1": "b", "n2": "c"}, nil, []string{"a", "b", "c"}},
		{"one moved", servers("a", "b", "c"), map[string]string{"n0": "a", "n1": "x", "n2": "c"}, nil, []string{"a", "x", "c"}},
		{"dead member keeps its record", servers("a", "b", "c"), map[string]string{"n0": "a", "n2": "c"}, nil, []string{"a", "b", "c"}},
		{"two swapped", servers("a", "b", "c"), map[string]string{"n0": "b", "n1": "a", "n2": "c"}, nil, []string{"b", "a", "c"}},
		{"three rotated", servers("a", "b", "c"), map[string]string{"n0": "b", "n1": "c", "n2": "a"}, nil, []string{"b", "c", "a"}},
		{"moved onto a dead member's record", servers("a", "b", "c"), map[string]string{"n0": "b", "n2": "c"}, nil, []string{"b", "n1.moved.invalid:0", "c"}},
		{"a joining member takes a dead member's address", servers("a", "b"), map[string]string{"n0": "a", "n9": "b"}, []string{"n9"}, []string{"a", "n1.moved.invalid:0"}},
		{"gossip gives two members one address", servers("a", "b"), map[string]string{"n0": "a", "n1": "a"}, nil, []string{"a", "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conf, steps := applyFixes(t, tc.conf, tc.current, tc.joining)
			for i, want := range tc.want {
				if got := string(conf.Servers[i].Address); got != want {
					t.Errorf("n%d: address %s after %d changes, want %s", i, got, steps, want)
				}
				if conf.Servers[i].Suffrage != raft.Voter {
					t.Errorf("n%d lost its vote", i)
				}
			}
		})
	}
}
