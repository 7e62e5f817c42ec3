package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// probe runs `kvnode healthcheck` as the image's HEALTHCHECK does: the
// node's address comes from the same environment the node reads.
func probe(env []string, args ...string) (string, error) {
	var out bytes.Buffer
	err := runWithOutput(context.Background(), append([]string{"healthcheck"}, args...), env, &out)
	return out.String(), err
}

func TestHealthcheckFollowsReadiness(t *testing.T) {
	ip := nodetest.New(t)
	// One of two expected members: alive, but not ready.
	n0 := ip.Start("n0", 2)
	env := []string{"KVNODE_HTTP_ADDR=" + n0.HTTPAddr()}
	if _, err := probe(env); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("healthcheck of a node waiting for its cluster = %v, want a 503 failure", err)
	}
	if out, err := probe(nil, "--url", "http://"+n0.HTTPAddr()+"/livez"); err != nil {
		t.Fatalf("healthcheck --url .../livez of a live node = %v (%s)", err, out)
	}
	ip.Start("n1", 2)
	waitfor.Cond(t, 20*time.Second, "the healthcheck to pass once the cluster formed", func() bool {
		_, err := probe(env)
		return err == nil
	})
	out, _ := probe(env)
	if want := "ok: http://" + n0.HTTPAddr() + "/readyz"; strings.TrimSpace(out) != want {
		t.Errorf("healthcheck printed %q, want %q", out, want)
	}
	ip.Stop("n0", true)
	if _, err := probe(env, "--timeout", "2s"); err == nil {
		t.Fatalf("healthcheck of a stopped node passed")
	}
}

func TestHealthcheckOverHTTPS(t *testing.T) {
	dir := t.TempDir()
	ca := nodetest.NewCA(t, "probe-ca")
	cert, key := ca.Issue(t, dir, "n0")
	ip := nodetest.New(t)
	ip.Tune = func(_ string, cfg *node.Config) { cfg.TLSCert, cfg.TLSKey = cert, key }
	n0 := ip.Start("n0", 1)
	env := []string{"KVNODE_HTTP_ADDR=" + n0.HTTPAddr(), "KVNODE_TLS_CERT=" + cert}
	waitfor.Cond(t, 20*time.Second, "the healthcheck to pass over HTTPS", func() bool {
		_, err := probe(env)
		return err == nil
	})
}

// TestHealthcheckWithClientCertAuth: a node whose REST port requires
// client certificates is probed on --metrics-addr's plain listener when
// it has one, else with its own certificate; a probe without either is
// refused at the handshake and fails.
func TestHealthcheckWithClientCertAuth(t *testing.T) {
	dir := t.TempDir()
	ca := nodetest.NewCA(t, "probe-ca")
	caPath := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caPath, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cert, key := ca.Issue(t, dir, "n0")
	ip := nodetest.New(t)
	ip.Tune = func(_ string, cfg *node.Config) {
		cfg.TLSCert, cfg.TLSKey, cfg.TLSCA, cfg.ClientCertAuth = cert, key, caPath, true
		cfg.MetricsAddr = "127.0.0.1:0"
	}
	n0 := ip.Start("n0", 1)
	env := []string{"KVNODE_HTTP_ADDR=" + n0.HTTPAddr(), "KVNODE_TLS_CERT=" + cert, "KVNODE_TLS_KEY=" + key, "KVNODE_CLIENT_CERT_AUTH=true"}
	waitfor.Cond(t, 20*time.Second, "the healthcheck to pass with the node's own certificate", func() bool {
		_, err := probe(env)
		return err == nil
	})
	out, err := probe(append(env, "KVNODE_METRICS_ADDR="+n0.MetricsAddr()))
	if want := "ok: http://" + n0.MetricsAddr() + "/readyz"; err != nil || strings.TrimSpace(out) != want {
		t.Errorf("healthcheck with --metrics-addr: %v, printed %q; want %q", err, out, want)
	}
	if _, err := probe(env[:2]); err == nil {
		t.Error("a healthcheck without a client certificate passed against --client-cert-auth")
	}
}

func TestLocalProbeURL(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, "http://127.0.0.1:8080/readyz"},
		{[]string{"KVNODE_HTTP_ADDR=:9000"}, "http://127.0.0.1:9000/readyz"},
		{[]string{"KVNODE_HTTP_ADDR=0.0.0.0:9000"}, "http://127.0.0.1:9000/readyz"},
		{[]string{"KVNODE_HTTP_ADDR=[::]:9000"}, "http://127.0.0.1:9000/readyz"},
		{[]string{"KVNODE_HTTP_ADDR=10.1.2.3:8080"}, "http://10.1.2.3:8080/readyz"},
		{[]string{"KVNODE_HTTP_ADDR=[fd00::1]:8080"}, "http://[fd00::1]:8080/readyz"},
		{[]string{"KVNODE_TLS_CERT=/tls/tls.crt"}, "https://127.0.0.1:8080/readyz"},
		{[]string{"KVNODE_TLS_CERT="}, "http://127.0.0.1:8080/readyz"},
	} {
		if got := localProbe(tc.env); got.url != tc.want || got.cert != "" {
			t.Errorf("localProbe(%q) = %+v, want %s without a certificate", tc.env, got, tc.want)
		}
	}
	// Under --client-cert-auth: the plain listener, else the node's
	// certificate.
	tlsEnv := []string{"KVNODE_TLS_CERT=/tls/tls.crt", "KVNODE_TLS_KEY=/tls/tls.key", "KVNODE_CLIENT_CERT_AUTH=true"}
	if got, want := localProbe(append(tlsEnv, "KVNODE_METRICS_ADDR=:9090")), (probeTarget{url: "http://127.0.0.1:9090/readyz"}); got != want {
		t.Errorf("with a metrics listener: %+v, want %+v", got, want)
	}
	if got, want := localProbe(tlsEnv), (probeTarget{"https://127.0.0.1:8080/readyz", "/tls/tls.crt", "/tls/tls.key"}); got != want {
		t.Errorf("without one: %+v, want %+v", got, want)
	}
}
