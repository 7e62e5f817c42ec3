package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node/nodetest"
)

// curlResult is what one curl run gave: the HTTP status ("000" when no
// answer came), the body, curl's exit code and its error output.
type curlResult struct {
	status, body string
	exit         int
	stderr       string
}

// curl runs curl with args, bounded in time, printing the status after
// the body.
func curl(t *testing.T, args ...string) curlResult {
	t.Helper()
	cmd := exec.Command("curl", append([]string{"-sS", "--max-time", "10", "-w", "\n%{http_code}"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	r := curlResult{stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.exit = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("curl: %v", err)
	}
	i := strings.LastIndexByte(string(out), '\n')
	if i < 0 {
		t.Fatalf("curl printed %q, without the status line", out)
	}
	r.body, r.status = string(out[:i]), string(out[i+1:])
	return r
}

// cause is the API's {"cause": ...} of a body.
func (r curlResult) cause() string {
	var doc struct {
		Cause string `json:"cause"`
	}
	_ = json.Unmarshal([]byte(r.body), &doc)
	return doc.Cause
}

// TestClientCertificatesWithCurl: a real process started with
// --client-cert-auth and --client-ca, against curl: a certificate of the
// clients' CA is the user its common name names (200 for what the user
// may do, 403 with the API's error body for what it may not, 401 for a
// name that is no user, Basic credentials winning); no certificate, one
// of another CA and the members' own certificate never get past the
// handshake. The probes answer on --metrics-addr without a certificate.
// A new clients' CA put in place of the file is in force without a
// restart: its certificates get in, the old CA's no longer do.
func TestClientCertificatesWithCurl(t *testing.T) {
	bin := kvnodeBinary(t)
	dir := t.TempDir()
	write := func(path string, data []byte) {
		t.Helper()
		// As an operator replaces a file: a new one renamed over it.
		if err := os.WriteFile(path+".tmp", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	cluster, clientsA, clientsB, other := nodetest.NewCA(t, "cluster CA"), nodetest.NewCA(t, "clients A"), nodetest.NewCA(t, "clients B"), nodetest.NewCA(t, "another CA")
	caPath, clientCAPath := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "clients", "ca.pem")
	if err := os.Mkdir(filepath.Dir(clientCAPath), 0o700); err != nil {
		t.Fatal(err)
	}
	write(caPath, cluster.PEM)
	write(clientCAPath, clientsA.PEM)
	nodeCert, nodeKey := cluster.Issue(t, dir, "node0")
	// cert is the curl flags of a certificate ca issued for cn.
	cert := func(ca *nodetest.CA, cn string) []string {
		d := t.TempDir()
		c, k := ca.Issue(t, d, cn)
		return []string{"--cert", c, "--key", k}
	}
	admin, viewer, stranger := cert(clientsA, "admin"), cert(clientsA, "viewer"), cert(clientsA, "stranger")

	hash := func(pw string) string { return hashPassword(t, bin, pw) }
	security := filepath.Join(dir, "security.json")
	write(security, []byte(`{"users":[`+
		`{"name":"admin","password":"`+hash("admin-pw")+`","roles":["admin"]},`+
		`{"name":"viewer","password":"`+hash("viewer-pw")+`","roles":["reader"]}],`+
		`"roles":[{"name":"admin","permissions":["DATA:READ","DATA:WRITE","CLUSTER:READ","CLUSTER:MANAGE"]},`+
		`{"name":"reader","permissions":["DATA:READ","CLUSTER:READ"]}]}`))

	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0])
	pc := startCluster(t, clusterSpec{n: 1, regions: "orders:REPLICATE", extra: []string{
		"--tls-cert", nodeCert, "--tls-key", nodeKey, "--tls-ca", caPath,
		"--client-cert-auth", "--client-ca", clientCAPath, "--security-file", security,
		"--metrics-addr", metricsAddr,
	}})
	p := pc.procs[0]
	base := strings.Replace(p.httpURL, "http://", "https://", 1)
	https := func(args ...string) curlResult {
		t.Helper()
		return curl(t, append([]string{"--cacert", caPath}, args...)...)
	}

	// The probes: on the plain listener, no certificate needed.
	waitfor.Cond(t, 30*time.Second, "/readyz on --metrics-addr to answer 200 without a certificate", func() bool {
		return curl(t, "http://"+metricsAddr+"/readyz").status == "200"
	})
	if r := curl(t, "http://"+metricsAddr+"/livez"); r.status != "200" {
		t.Errorf("/livez on --metrics-addr: %s %s", r.status, r.stderr)
	}
	waitfor.Cond(t, 30*time.Second, "the region orders to exist", func() bool {
		return https(append(admin, base+"/kv/v1/orders")...).status == "200"
	})

	// Accepted: the certificate's user, with its permissions.
	r := https(append(admin, "-X", "PUT", "-H", "Content-Type: application/json", "-d", `{"total":10}`, base+"/kv/v1/orders/1")...)
	if r.status != "200" {
		t.Fatalf("PUT as the admin's certificate: %s %s %s", r.status, r.body, r.stderr)
	}
	if r := https(append(viewer, base+"/kv/v1/orders/1")...); r.status != "200" || r.body != `{"total":10}` {
		t.Errorf("GET as the viewer's certificate: %s %s %s", r.status, r.body, r.stderr)
	}
	// A user without the right: 403, and nothing written.
	r = https(append(viewer, "-X", "PUT", "-H", "Content-Type: application/json", "-d", `{"total":20}`, base+"/kv/v1/orders/2")...)
	if r.status != "403" || !strings.Contains(r.cause(), "user viewer lacks DATA:WRITE:orders:2") {
		t.Errorf("PUT as the viewer's certificate: %s %s, want 403 naming the user and the permission", r.status, r.body)
	}
	if r := https(append(admin, base+"/kv/v1/orders/2")...); r.status != "404" {
		t.Errorf("after the viewer's refused PUT, orders/2 is %s %s, want 404", r.status, r.body)
	}
	// A certificate of the clients' CA whose name is no user: 401.
	r = https(append(stranger, base+"/kv/v1/orders/1")...)
	if r.status != "401" || !strings.Contains(r.cause(), `common name "stranger" is not a user of the security file`) {
		t.Errorf("GET as a certificate of no user: %s %s, want 401 saying so", r.status, r.body)
	}
	// Basic credentials, when given, decide.
	r = https(append(viewer, "-u", "admin:admin-pw", "-X", "PUT", "-H", "Content-Type: application/json", "-d", `{"total":30}`, base+"/kv/v1/orders/3")...)
	if r.status != "200" {
		t.Errorf("PUT with the viewer's certificate and the admin's password: %s %s, want 200", r.status, r.body)
	}
	if r := https(append(admin, "-u", "admin:wrong", base+"/kv/v1/orders/1")...); r.status != "401" {
		t.Errorf("the admin's certificate with a wrong password: %s %s, want 401", r.status, r.body)
	}

	// Refused at the handshake: no HTTP answer at all.
	refused := func(what string, args ...string) {
		t.Helper()
		r := https(append(args, base+"/kv/v1/orders/1")...)
		if r.exit == 0 || r.status != "000" || !strings.Contains(r.stderr, "alert") {
			t.Errorf("%s: curl exit %d, status %s, %s; want the handshake refused with an alert", what, r.exit, r.status, r.stderr)
		}
		t.Logf("%s: curl exit %d: %s", what, r.exit, strings.TrimSpace(r.stderr))
	}
	refused("no certificate")
	refused("no certificate, with the admin's password", "-u", "admin:admin-pw")
	refused("a certificate of another CA, for a user's name", cert(other, "admin")...)
	refused("a member's certificate (the cluster CA is not the clients')", "--cert", nodeCert, "--key", nodeKey)
	if r := https(base + "/readyz"); r.status != "000" {
		t.Errorf("/readyz on the REST port without a certificate: %s, want the handshake refused", r.status)
	}
	waitfor.Cond(t, 10*time.Second, "the log to name the refused certificate", func() bool {
		data, _ := os.ReadFile(p.logPath)
		return strings.Contains(string(data), "TLS handshake error") && strings.Contains(string(data), "CN=admin") &&
			strings.Contains(string(data), "not one the client CA accepts")
	})
	m := curl(t, "http://"+metricsAddr+"/metrics")
	for _, want := range []string{"kvnode_client_certificates_refused_total 2", `kvnode_login_failures_total{reason="unknown_certificate_user"} 1`} {
		if !strings.Contains(m.body, want+"\n") {
			t.Errorf("the metrics lack %q", want)
		}
	}

	// A new clients' CA, put in place: in force without a restart.
	adminB := cert(clientsB, "admin")
	write(clientCAPath, clientsB.PEM)
	waitfor.Cond(t, 10*time.Second, "a certificate of the new clients' CA to get in", func() bool {
		return https(append(adminB, base+"/kv/v1/orders/1")...).status == "200"
	})
	refused("a certificate of the old clients' CA", admin...)
	if data, _ := os.ReadFile(p.logPath); !strings.Contains(string(data), "client CA reloaded") {
		t.Error("no log line of the client CA's reload")
	}
}
