package node_test

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/internal/promtest"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// securityFile is a security file whose users (name → password) all
// hold CLUSTER:READ.
func securityFile(t *testing.T, users map[string]string) []byte {
	t.Helper()
	f := auth.File{Roles: []auth.Role{{Name: "reader", Permissions: []string{"CLUSTER:READ"}}}}
	for name, pw := range users {
		h, err := auth.HashPassword([]byte(pw))
		if err != nil {
			t.Fatal(err)
		}
		f.Users = append(f.Users, auth.User{Name: name, Password: h, Roles: []string{"reader"}})
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// issuePEM is a fresh certificate and key from ca for 127.0.0.1 and
// localhost, in PEM.
func issuePEM(t *testing.T, ca *nodetest.CA) (certPEM, keyPEM []byte) {
	t.Helper()
	certPath, keyPath := ca.Issue(t, t.TempDir(), "a")
	var err error
	if certPEM, err = os.ReadFile(certPath); err != nil {
		t.Fatal(err)
	}
	if keyPEM, err = os.ReadFile(keyPath); err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// serialOf is the serial number of a PEM certificate, in hex.
func serialOf(t *testing.T, certPEM []byte) string {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.Text(16)
}

// TestLiveReload: a member whose certificate, key, CA and security file
// live in a Kubernetes-style secret volume takes a Secret update (one
// ..data swap) without a restart: new HTTPS connections are shown the new
// certificate, a user added can log in and one removed gets 401. A
// broken security file keeps the one in force and is counted in
// kvnode_reload_failures_total; Reload (SIGHUP's path) re-reads every file
// even when nothing changed, and reports a broken one.
func TestLiveReload(t *testing.T) {
	ca := nodetest.NewCA(t, "kvnode test CA")
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	vol := nodetest.NewSecretVolume(t)
	cert1, key1 := issuePEM(t, ca)
	secret := map[string][]byte{
		"tls.crt": cert1, "tls.key": key1, "ca.crt": ca.PEM,
		"security.json": securityFile(t, map[string]string{"alice": "alice-pw", "bob": "bob-pw"}),
	}
	vol.Update(secret)

	logs := &nodetest.LogTap{}
	ip := nodetest.New(t)
	ip.Logger = logs.Logger
	ip.Tune = func(_ string, cfg *node.Config) {
		cfg.TLSCert, cfg.TLSKey, cfg.TLSCA = vol.Path("tls.crt"), vol.Path("tls.key"), vol.Path("ca.crt")
		cfg.SecurityFile = vol.Path("security.json")
		cfg.MetricsAddr = "127.0.0.1:0"
	}
	n := ip.Start("a", 1)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	status := func(user, password string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "https://"+n.HTTPAddr()+"/kv/v1/servers", nil)
		req.SetBasicAuth(user, password)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET /kv/v1/servers as %s: %v", user, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// serial is the serial of the certificate a new connection is shown.
	serial := func() string {
		t.Helper()
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", n.HTTPAddr(), &tls.Config{RootCAs: pool})
		if err != nil {
			t.Fatalf("TLS dial: %v", err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Text(16)
	}
	metric := func(name, file string) float64 {
		t.Helper()
		code, body := get(t, "http://"+n.MetricsAddr()+"/metrics", "", "")
		if code != 200 {
			t.Fatalf("GET /metrics = %d", code)
		}
		v, _ := promtest.Parse(t, body).Get(name, map[string]string{"file": file})
		return v
	}

	if got, want := serial(), serialOf(t, cert1); got != want {
		t.Fatalf("at start a connection is shown serial %s, want %s", got, want)
	}
	if status("alice", "alice-pw") != 200 || status("carol", "carol-pw") != 401 {
		t.Fatal("at start: alice should be let in and carol refused")
	}
	for _, file := range []string{"tls", "ca", "security"} {
		if v := metric("kvnode_reload_successes_total", file); v != 1 {
			t.Errorf("kvnode_reload_successes_total{file=%q} at start = %v, want 1 (the start's load)", file, v)
		}
	}

	// One Secret update: a new certificate, carol in and alice out.
	cert2, key2 := issuePEM(t, ca)
	secret["tls.crt"], secret["tls.key"] = cert2, key2
	secret["security.json"] = securityFile(t, map[string]string{"bob": "bob-pw", "carol": "carol-pw"})
	vol.Update(secret)
	want := serialOf(t, cert2)
	waitfor.Cond(t, 10*time.Second, "a new connection to be shown the new certificate", func() bool { return serial() == want })
	waitfor.Cond(t, 10*time.Second, "carol to be let in", func() bool { return status("carol", "carol-pw") == 200 })
	if got := status("alice", "alice-pw"); got != 401 {
		t.Errorf("alice, removed from the security file: %d, want 401", got)
	}
	if !logs.Seen("a", "TLS certificate and key reloaded", "serial="+want) {
		t.Error("no info log of the certificate's reload with its serial")
	}

	// A broken security file: the one in force stays, the failure counts.
	secret["security.json"] = []byte(`{"users":[`)
	vol.Update(secret)
	waitfor.Cond(t, 10*time.Second, "the broken security file to be refused and counted", func() bool {
		return metric("kvnode_reload_failures_total", "security") == 1
	})
	if !logs.Seen("a", "reloading the security file failed; the previous one stays in force") {
		t.Error("no error log of the refused security file")
	}
	if got := status("carol", "carol-pw"); got != 200 {
		t.Errorf("carol after a broken security file: %d, want 200 (the file in force stays)", got)
	}
	if got := status("carol", "wrong"); got != 401 {
		t.Errorf("a wrong password after a broken security file: %d, want 401", got)
	}

	// SIGHUP's path: every file is read again, changed or not; the broken
	// one is reported and stays refused.
	before := metric("kvnode_reload_successes_total", "tls")
	if err := n.Reload(); err == nil || !strings.Contains(err.Error(), "security") {
		t.Errorf("Reload with a broken security file = %v, want its refusal", err)
	}
	if got := metric("kvnode_reload_successes_total", "tls"); got != before+1 {
		t.Errorf("kvnode_reload_successes_total{file=tls} after Reload = %v, want %v (read again although unchanged)", got, before+1)
	}
	if got := metric("kvnode_reload_failures_total", "security"); got != 2 {
		t.Errorf("kvnode_reload_failures_total{file=security} after Reload = %v, want 2", got)
	}
	secret["security.json"] = securityFile(t, map[string]string{"dave": "dave-pw"})
	vol.Update(secret)
	if err := n.Reload(); err != nil {
		t.Errorf("Reload with good files = %v", err)
	}
	if got := status("dave", "dave-pw"); got != 200 {
		t.Errorf("dave after Reload: %d, want 200", got)
	}
}

// TestPeerNamesCluster: three members with mutual TLS on the internal
// port and --peer-names form a cluster and replicate; a member whose
// certificate the same CA issued for another name gossips (it has the
// gossip key: peer names cannot guard gossip, which memberlist encrypts
// with the key, not TLS) but its internal connections are refused at the
// handshake, logged with the names it offered and counted: it never gets
// the data and cannot write.
func TestPeerNamesCluster(t *testing.T) {
	dir := t.TempDir()
	ca := nodetest.NewCA(t, "kvnode test CA")
	caPath := dir + "/ca.pem"
	if err := os.WriteFile(caPath, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	gossipKey := base64.StdEncoding.EncodeToString(key)

	ip := nodetest.New(t)
	logs := &nodetest.LogTap{}
	ip.Logger = logs.Logger
	ip.Tune = func(name string, cfg *node.Config) {
		dns := name + ".kvnode-peers.default.svc.cluster.local"
		if name == "intruder" {
			dns = "billing.default.svc.cluster.local"
		}
		cfg.TLSCert, cfg.TLSKey = ca.IssueNames(t, dir, name, dns, "localhost")
		cfg.TLSCA = caPath
		cfg.PeerNames = []string{"*.kvnode-peers.default.svc.cluster.local"}
		cfg.GossipKey = gossipKey
		cfg.MetricsAddr = "127.0.0.1:0"
	}
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}
	call := httpsCaller(t, ca.PEM)
	waitfor.Cond(t, 30*time.Second, "the cluster with --peer-names to accept a region", func() bool {
		code, _ := call(ip.Nodes["a"], "POST", "/management/v1/regions", `{"name":"orders","type":"REPLICATE"}`)
		return code == 201 || code == 409
	})
	// A write through a follower is forwarded over the internal port.
	for _, name := range []string{"a", "b", "c"} {
		if code, body := call(ip.Nodes[name], "PUT", "/kv/v1/orders/k"+name, `{"by":"`+name+`"}`); code != 200 {
			t.Fatalf("PUT through %s = %d %s", name, code, body)
		}
	}
	for _, name := range []string{"a", "b", "c"} {
		if code, body := call(ip.Nodes[name], "GET", "/kv/v1/orders/ka,kb,kc", ""); code != 200 || body != `{"orders":[{"by":"a"},{"by":"b"},{"by":"c"}]}` {
			t.Fatalf("GET on %s = %d %s", name, code, body)
		}
	}

	intruder := ip.Start("intruder", 3)
	// No member takes it into a Raft group (it used to be added to the
	// control group from gossip alone, issue 28): every member checks it
	// over the internal port, and the handshake refuses its name.
	leader := ip.Nodes["a"]
	for _, name := range []string{"b", "c"} {
		if ip.Nodes[name].Store().IsLeader() {
			leader = ip.Nodes[name]
		}
	}
	waitfor.Cond(t, 30*time.Second, "the leader to refuse the intruder's certificate for its name", func() bool {
		return logs.Seen(leader.Name(), "refused a peer's certificate", "reason=name", "billing.default.svc.cluster.local")
	})
	waitfor.Cond(t, 30*time.Second, "the intruder listed as refused, for its name", func() bool {
		_, body := call(leader, "GET", "/management/v1/cluster", "")
		return strings.Contains(body, `"name":"intruder"`) && strings.Contains(body, `"identity":"refused"`) && strings.Contains(body, "none of which --peer-names")
	})
	for _, name := range []string{"a", "b", "c"} {
		_, servers, err := ip.Nodes[name].Store().Configuration()
		for _, srv := range servers {
			if err == nil && srv.ID == "intruder" {
				t.Errorf("%s: the intruder is in the control group: %+v", name, servers)
			}
		}
	}
	code, body := get(t, "http://"+leader.MetricsAddr()+"/metrics", "", "")
	if code != 200 {
		t.Fatalf("GET /metrics = %d", code)
	}
	if v, _ := promtest.Parse(t, body).Get("kvnode_peer_certificates_refused_total", map[string]string{"reason": "name"}); v < 1 {
		t.Errorf("kvnode_peer_certificates_refused_total{reason=name} on the leader = %v, want at least 1", v)
	}
	if gs := intruder.Store().Status().Groups; len(gs) != 1 || gs[0].HasState || gs[0].AppliedIndex != 0 {
		t.Errorf("the intruder has Raft state %+v, want none", gs)
	}
	if code, _ := call(intruder, "GET", "/kv/v1/orders/ka?consistency=stale", ""); code == 200 {
		t.Error("the intruder received the data")
	}
	if code, body := call(intruder, "PUT", "/kv/v1/orders/intruder", `{"x":1}`); code == 200 {
		t.Errorf("a write through the intruder succeeded: %s", body)
	}
	if code, _ := call(ip.Nodes["a"], "GET", "/kv/v1/orders/intruder", ""); code != 404 {
		t.Errorf("the intruder's write is in the cluster (GET = %d)", code)
	}
	// The intruder trusts none of the members either (it cannot prove
	// them): a function it runs on every member runs on itself alone.
	if code, body := call(intruder, "POST", "/kv/v1/functions/MemberInfo", ""); code != 200 || strings.Count(body, `"name":`) != 1 {
		t.Errorf("a function the intruder ran on the members = %d %s, want itself alone", code, body)
	}
	// Its own identity checks make it dial the others, which refuse it.
	waitfor.Cond(t, 10*time.Second, "a member to refuse the intruder's own connection", func() bool {
		for _, name := range []string{"a", "b", "c"} {
			if logs.Seen(name, "refused a peer's certificate", "direction=inbound", "billing.default.svc.cluster.local", "remote=127.0.0.1:") {
				return true
			}
		}
		return false
	})
}
