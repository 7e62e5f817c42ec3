package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA is a certificate authority for tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue writes a certificate for 127.0.0.1 and its key into dir and
// returns their paths.
func (ca *testCA) issue(t *testing.T, dir, name string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}

// TestMutualTLSCluster: three members with HTTPS, mutual TLS on the
// internal port and encrypted gossip form a cluster and serve; a member
// with a certificate from another CA cannot take part in Raft, and one
// with another gossip key does not join at all.
func TestMutualTLSCluster(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "kvnode test CA")
	caPath := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caPath, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	rogueCA := newTestCA(t, "another CA")
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	goodKey := base64.StdEncoding.EncodeToString(key)
	_, _ = rand.Read(key)
	otherKey := base64.StdEncoding.EncodeToString(key)

	ip := newInProcess(t)
	logs := &logTap{}
	ip.logger = logs.logger
	ip.tune = func(name string, cfg *Config) {
		signer := ca
		if name == "rogue" {
			signer = rogueCA
		}
		cfg.TLSCert, cfg.TLSKey = signer.issue(t, dir, name)
		cfg.TLSCA = caPath
		cfg.GossipKey = goodKey
		if name == "stranger" {
			cfg.GossipKey = otherKey
		}
	}
	for _, name := range []string{"a", "b", "c"} {
		ip.start(name, 3)
	}

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.pem)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	httpsCall := func(n *node, method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "https://"+n.httpLn.Addr().String()+path, strings.NewReader(body))
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
	waitUntil(t, 30*time.Second, "the TLS cluster to accept a write", func() bool {
		status, _ := httpsCall(ip.nodes["a"], "POST", "/management/v1/regions", `{"name":"orders","type":"REPLICATE"}`)
		return status == 201 || status == 409
	})
	for i, name := range []string{"a", "b", "c"} {
		if status, body := httpsCall(ip.nodes[name], "PUT", "/kv/v1/orders/k"+name, `{"i":`+string(rune('0'+i))+`}`); status != 200 {
			t.Fatalf("PUT over https on %s = %d %s", name, status, body)
		}
	}
	for _, name := range []string{"a", "b", "c"} {
		status, body := httpsCall(ip.nodes[name], "GET", "/kv/v1/orders/ka,kb,kc", "")
		if status != 200 || body != `{"orders":[{"i":0},{"i":1},{"i":2}]}` {
			t.Fatalf("GET over https on %s = %d %s", name, status, body)
		}
		_, servers := httpsCall(ip.nodes[name], "GET", "/kv/v1/servers", "")
		var urls []string
		_ = json.Unmarshal([]byte(servers), &urls)
		if len(urls) != 3 || !strings.HasPrefix(urls[0], "https://") {
			t.Errorf("%s: /servers = %s, want three https URLs", name, servers)
		}
	}
	// Plain HTTP to the REST port gets nowhere.
	if resp, err := http.Get("http://" + ip.nodes["a"].httpLn.Addr().String() + "/kv/v1/ping"); err == nil {
		if resp.StatusCode == 200 {
			t.Error("plain HTTP was served on a TLS port")
		}
		resp.Body.Close()
	}

	// A member whose certificate another CA signed gossips (it has the
	// key) but cannot talk Raft or RPC: it never gets the data, and
	// writes through it fail. Proof that it could have got the data: the
	// leader took it into the control group (as a non-voter, from gossip)
	// and tried to replicate to it, and the TLS handshake refused it.
	rogue := ip.start("rogue", 3)
	var leader *node
	waitUntil(t, 30*time.Second, "the leader to add the rogue member to the control group", func() bool {
		for _, name := range []string{"a", "b", "c"} {
			n := ip.nodes[name]
			if !n.store.IsLeader() {
				continue
			}
			_, servers, err := n.store.Configuration()
			for _, srv := range servers {
				if err == nil && srv.ID == "rogue" {
					leader = n
					return true
				}
			}
		}
		return false
	})
	waitUntil(t, 30*time.Second, "the leader's replication to the rogue member to fail on its certificate", func() bool {
		return logs.seen(leader.cfg.Name, "failed to appendEntries to", "rogue", "certificate")
	})
	if gs := rogue.store.Status().Groups; len(gs) != 1 || gs[0].HasState || gs[0].AppliedIndex != 0 {
		t.Errorf("the member with a foreign certificate has Raft state %+v, want none", gs)
	}
	if status, _ := httpsCall(rogue, "GET", "/kv/v1/orders/ka?consistency=stale", ""); status == 200 {
		t.Error("the member with a foreign certificate received the data")
	}
	if status, body := httpsCall(rogue, "PUT", "/kv/v1/orders/rogue", `{"x":1}`); status == 200 {
		t.Errorf("a write through the member with a foreign certificate succeeded: %s", body)
	}
	if status, _ := httpsCall(ip.nodes["a"], "GET", "/kv/v1/orders/rogue", ""); status != 404 {
		t.Errorf("the rogue write is in the cluster (GET = %d)", status)
	}

	// A member with another gossip key does not join. Proof that it
	// tried: its join failed, and a member refused its message because no
	// key could decrypt it.
	stranger := ip.start("stranger", 3)
	waitUntil(t, 30*time.Second, "the member with another gossip key to fail to join", func() bool {
		return logs.seen("stranger", "join failed")
	})
	waitUntil(t, 30*time.Second, "a member to refuse the stranger's gossip for its key", func() bool {
		for _, name := range []string{"a", "b", "c", "rogue"} {
			if logs.seen(name, "memberlist: failed to receive", "no installed keys could decrypt") {
				return true
			}
		}
		return false
	})
	_, servers := httpsCall(stranger, "GET", "/kv/v1/servers", "")
	if strings.Count(servers, "https://") != 1 {
		t.Errorf("the member with another gossip key sees %s, want only itself", servers)
	}
	_, servers = httpsCall(ip.nodes["a"], "GET", "/kv/v1/servers", "")
	if strings.Contains(servers, stranger.restURL) {
		t.Errorf("the cluster lists the member with another gossip key: %s", servers)
	}
}
