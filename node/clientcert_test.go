package node_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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

// TestClientCertAuthWithoutSecurityFile: --client-cert-auth without a
// security file, as in etcd: the handshake still admits only certificates
// of the clients' CA, and every one of them may do everything (the log
// says so at start). A --client-ca that does not load stops the start
// with an error naming the flag.
func TestClientCertAuthWithoutSecurityFile(t *testing.T) {
	dir := t.TempDir()
	ca, other := nodetest.NewCA(t, "cluster CA"), nodetest.NewCA(t, "another CA")
	caPath := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caPath, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &nodetest.LogTap{}
	ip := nodetest.New(t)
	ip.Logger = logs.Logger
	ip.Tune = func(name string, cfg *node.Config) {
		cfg.TLSCert, cfg.TLSKey = ca.Issue(t, dir, name)
		cfg.TLSCA, cfg.ClientCertAuth = caPath, true
	}
	n := ip.Start("a", 1)
	if !logs.Seen("a", "--client-cert-auth without --security-file") {
		t.Error("no warning at start that every certificate of the CA may do everything")
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	client := func(signer *nodetest.CA) *http.Client {
		c, k := signer.Issue(t, t.TempDir(), "anyone")
		pair, err := tls.LoadX509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }}}}
	}
	put := func(c *http.Client, body string) (int, error) {
		req, _ := http.NewRequest("POST", "https://"+n.HTTPAddr()+"/management/v1/regions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	anyone := client(ca)
	waitfor.Cond(t, 30*time.Second, "any certificate of the CA to create a region", func() bool {
		code, err := put(anyone, `{"name":"orders","type":"REPLICATE"}`)
		return err == nil && code == 201
	})
	if code, err := put(client(other), `{"name":"more","type":"REPLICATE"}`); err == nil {
		t.Errorf("a certificate of another CA got an answer: %d", code)
	}

	cfg := node.Default()
	cfg.Name, cfg.DataDir = "b", filepath.Join(dir, "b")
	cfg.HTTPAddr, cfg.InternalAddr, cfg.GossipAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.TLSCert, cfg.TLSKey = ca.Issue(t, dir, "b")
	cfg.ClientCertAuth, cfg.ClientCA = true, filepath.Join(dir, "clients.pem")
	if err := os.WriteFile(cfg.ClientCA, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := node.Start(context.Background(), cfg); err == nil {
		_ = b.Close()
		t.Fatal("a node started with a --client-ca that holds no certificate")
	} else if !strings.Contains(err.Error(), "--client-ca") || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("start with a bad --client-ca: %v, want an error naming the flag and why", err)
	}
}
