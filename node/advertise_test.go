package node_test

import (
	"encoding/json"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// TestAdvertisedAddresses: with --advertise-internal and --advertise-gossip
// the other members reach a node where it says, not where it listens: here
// the internal address is advertised by host name, and the second node's
// replicated write only commits if Raft reached the first through it.
func TestAdvertisedAddresses(t *testing.T) {
	internal, gossip := freeTCPUDPPort(t), freeTCPUDPPort(t)
	ip := nodetest.New(t)
	ip.Tune = func(name string, cfg *node.Config) {
		cfg.Regions = nil
		if name == "a" {
			cfg.InternalAddr = "127.0.0.1:" + internal
			cfg.AdvertiseInternal = "localhost:" + internal
			cfg.GossipAddr = "127.0.0.1:" + gossip
			cfg.AdvertiseGossip = "127.0.0.1:" + gossip
		}
	}
	a := ip.Start("a", 2)
	b := ip.Start("b", 2)
	ip.Leader()

	var v struct {
		Term    uint64 `json:"term"`
		Members []struct {
			Name         string `json:"name"`
			InternalAddr string `json:"internalAddr"`
			GossipAddr   string `json:"gossipAddr"`
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(nodetest.MustCall(t, b, "GET", "/management/v1/cluster", "", 200).Body), &v); err != nil {
		t.Fatal(err)
	}
	if v.Term == 0 {
		t.Errorf("cluster view term = 0 after an election")
	}
	found := false
	for _, m := range v.Members {
		if m.Name == "a" {
			found = true
			if m.InternalAddr != "localhost:"+internal || m.GossipAddr != "127.0.0.1:"+gossip {
				t.Errorf("b sees a at internal %q gossip %q, want localhost:%s and 127.0.0.1:%s", m.InternalAddr, m.GossipAddr, internal, gossip)
			}
		}
	}
	if !found {
		t.Fatalf("b does not list a: %+v", v.Members)
	}
	nodetest.MustCall(t, b, "POST", "/management/v1/regions", `{"name":"r","type":"REPLICATE"}`, 201)
	nodetest.MustCall(t, b, "PUT", "/kv/v1/r/k", `{"v":1}`, 200)
	waitfor.Cond(t, 10*time.Second, "a to apply b's write", func() bool {
		return nodetest.Call(t, a, "GET", "/kv/v1/r/k", "").Status == 200
	})
}

// freeTCPUDPPort is a port free on 127.0.0.1 for TCP and UDP a moment ago.
func freeTCPUDPPort(t *testing.T) string {
	t.Helper()
	for range 10 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
		ln.Close()
		if err == nil {
			pc.Close()
			return strconv.Itoa(port)
		}
	}
	t.Fatal("no free port")
	return ""
}
