package node_test

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// TestMutualTLSCluster: three members with HTTPS, mutual TLS on the
// internal port and encrypted gossip form a cluster and serve; a member
// with a certificate from another CA cannot take part in Raft, and one
// with another gossip key does not join at all.
func TestMutualTLSCluster(t *testing.T) {
	dir := t.TempDir()
	ca := nodetest.NewCA(t, "kvnode test CA")
	caPath := filepath.Join(dir, "ca.PEM")
	if err := os.WriteFile(caPath, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	rogueCA := nodetest.NewCA(t, "another CA")
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	goodKey := base64.StdEncoding.EncodeToString(key)
	_, _ = rand.Read(key)
	otherKey := base64.StdEncoding.EncodeToString(key)

	ip := nodetest.New(t)
	logs := &nodetest.LogTap{}
	ip.Logger = logs.Logger
	ip.Tune = func(name string, cfg *node.Config) {
		signer := ca
		if name == "rogue" {
			signer = rogueCA
		}
		cfg.TLSCert, cfg.TLSKey = signer.Issue(t, dir, name)
		cfg.TLSCA = caPath
		cfg.GossipKey = goodKey
		if name == "stranger" {
			cfg.GossipKey = otherKey
		}
	}
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}

	httpsCall := httpsCaller(t, ca.PEM)
	waitfor.Cond(t, 30*time.Second, "the TLS cluster to accept a write", func() bool {
		status, _ := httpsCall(ip.Nodes["a"], "POST", "/management/v1/regions", `{"name":"orders","type":"REPLICATE"}`)
		return status == 201 || status == 409
	})
	for i, name := range []string{"a", "b", "c"} {
		if status, body := httpsCall(ip.Nodes[name], "PUT", "/kv/v1/orders/k"+name, `{"i":`+string(rune('0'+i))+`}`); status != 200 {
			t.Fatalf("PUT over https on %s = %d %s", name, status, body)
		}
	}
	for _, name := range []string{"a", "b", "c"} {
		status, body := httpsCall(ip.Nodes[name], "GET", "/kv/v1/orders/ka,kb,kc", "")
		if status != 200 || body != `{"orders":[{"i":0},{"i":1},{"i":2}]}` {
			t.Fatalf("GET over https on %s = %d %s", name, status, body)
		}
		_, servers := httpsCall(ip.Nodes[name], "GET", "/kv/v1/servers", "")
		var urls []string
		_ = json.Unmarshal([]byte(servers), &urls)
		if len(urls) != 3 || !strings.HasPrefix(urls[0], "https://") {
			t.Errorf("%s: /servers = %s, want three https URLs", name, servers)
		}
	}
	// Plain HTTP to the REST port gets nowhere.
	if resp, err := http.Get("http://" + ip.Nodes["a"].HTTPAddr() + "/kv/v1/ping"); err == nil {
		if resp.StatusCode == 200 {
			t.Error("plain HTTP was served on a TLS port")
		}
		resp.Body.Close()
	}

	// A member whose certificate another CA signed gossips (it has the
	// key) but cannot talk Raft or RPC: it never gets the data, writes
	// through it fail, and no member takes it into a Raft group (issue
	// 28: it used to be added to the control group from gossip alone).
	// Proof that it was looked at: the members checked it over the
	// internal port, refused its certificate, and list it as refused.
	rogue := ip.Start("rogue", 3)
	waitfor.Cond(t, 30*time.Second, "the members to refuse the rogue member's certificate", func() bool {
		for _, name := range []string{"a", "b", "c"} {
			_, body := httpsCall(ip.Nodes[name], "GET", "/management/v1/cluster", "")
			if !strings.Contains(body, `"name":"rogue"`) || !strings.Contains(body, `"identity":"refused"`) || !strings.Contains(body, "not from the cluster's CA") {
				return false
			}
		}
		return logs.Seen("a", "refused a member", "member=rogue")
	})
	for _, name := range []string{"a", "b", "c"} {
		_, servers, err := ip.Nodes[name].Store().Configuration()
		for _, srv := range servers {
			if err == nil && srv.ID == "rogue" {
				t.Errorf("%s: the rogue member is in the control group: %+v", name, servers)
			}
		}
	}
	if gs := rogue.Store().Status().Groups; len(gs) != 1 || gs[0].HasState || gs[0].AppliedIndex != 0 {
		t.Errorf("the member with a foreign certificate has Raft state %+v, want none", gs)
	}
	if status, _ := httpsCall(rogue, "GET", "/kv/v1/orders/ka?consistency=stale", ""); status == 200 {
		t.Error("the member with a foreign certificate received the data")
	}
	if status, body := httpsCall(rogue, "PUT", "/kv/v1/orders/rogue", `{"x":1}`); status == 200 {
		t.Errorf("a write through the member with a foreign certificate succeeded: %s", body)
	}
	if status, _ := httpsCall(ip.Nodes["a"], "GET", "/kv/v1/orders/rogue", ""); status != 404 {
		t.Errorf("the rogue write is in the cluster (GET = %d)", status)
	}

	// A member with another gossip key does not join. Proof that it
	// tried: its join failed, and a member refused its message because no
	// key could decrypt it.
	stranger := ip.Start("stranger", 3)
	waitfor.Cond(t, 30*time.Second, "the member with another gossip key to fail to join", func() bool {
		return logs.Seen("stranger", "join failed")
	})
	waitfor.Cond(t, 30*time.Second, "a member to refuse the stranger's gossip for its key", func() bool {
		for _, name := range []string{"a", "b", "c", "rogue"} {
			if logs.Seen(name, "memberlist: failed to receive", "no installed keys could decrypt") {
				return true
			}
		}
		return false
	})
	_, servers := httpsCall(stranger, "GET", "/kv/v1/servers", "")
	if strings.Count(servers, "https://") != 1 {
		t.Errorf("the member with another gossip key sees %s, want only itself", servers)
	}
	_, servers = httpsCall(ip.Nodes["a"], "GET", "/kv/v1/servers", "")
	if strings.Contains(servers, stranger.RESTURL()) {
		t.Errorf("the cluster lists the member with another gossip key: %s", servers)
	}
}

// httpsCaller sends requests to a node's REST API over HTTPS, trusting the
// CA in caPEM, and returns the status and body (status 0 and the error's
// text when there is no answer).
func httpsCaller(t *testing.T, caPEM []byte) func(n *node.Node, method, path, body string) (int, string) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return func(n *node.Node, method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "https://"+n.HTTPAddr()+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}
