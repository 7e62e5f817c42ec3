package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/cli"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// securityFile writes a security file with admin (everything) and viewer
// (reads only), whose passwords are hashed as kvnode hash-password does.
func securityFile(t *testing.T, dir string) string {
	t.Helper()
	hash := func(pw string) string {
		h, err := auth.HashPassword([]byte(pw + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	f := auth.File{
		Users: []auth.User{
			{Name: "admin", Password: hash("admin-pw"), Roles: []string{"admin"}},
			{Name: "viewer", Password: hash("viewer-pw"), Roles: []string{"reader"}},
		},
		Roles: []auth.Role{
			{Name: "admin", Permissions: []string{"DATA:READ", "DATA:WRITE", "CLUSTER:READ", "CLUSTER:MANAGE"}},
			{Name: "reader", Permissions: []string{"DATA:READ", "CLUSTER:READ"}},
		},
	}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, "security.json", string(data))
}

// TestCommandsWithSecurity: against a three-member cluster with security
// on, credentials come from the flags, the environment or a file; missing
// or wrong ones and missing permissions exit "denied".
func TestCommandsWithSecurity(t *testing.T) {
	dir := t.TempDir()
	security := securityFile(t, dir)
	c := startCluster(t, 3, "http", func(_ string, cfg *node.Config) { cfg.SecurityFile = security })
	urls := "KVNODE_URL=" + strings.Join(c.urls, ",")
	admin := []string{urls, "KVNODE_USER=admin", "KVNODE_PASSWORD=admin-pw"}
	viewerFile := writeFile(t, dir, "viewer.pw", "viewer-pw\n")
	waitReady(t, admin)

	// Credentials from the environment.
	expect(t, kvnode(t, admin, "", "region", "create", "orders"), 0, "region orders created\n")
	expect(t, kvnode(t, admin, "", "put", "orders", "1", `{"a":1}`), 0, "stored orders/1\n")
	// From a file (its first line), the user from a flag.
	viewer := []string{urls}
	expect(t, kvnode(t, viewer, "", "get", "orders", "1", "-u", "viewer", "--password-file", viewerFile), 0, "KEY  VALUE\n1    {\"a\":1}\n")
	// From the environment's file variable.
	viewerEnv := []string{urls, "KVNODE_USER=viewer", "KVNODE_PASSWORD_FILE=" + viewerFile}
	expect(t, kvnode(t, viewerEnv, "", "keys", "orders"), 0, "KEY\n1\n")
	// A flag wins over its variable: the viewer's flags over the admin's env.
	r := kvnode(t, admin, "", "delete", "orders", "1", "--user", "viewer", "--password", "viewer-pw")
	if r.code != cli.ExitDenied || !strings.Contains(r.err, "403") {
		t.Errorf("viewer's delete: exit %d (%s), want %d and a 403", r.code, r.err, cli.ExitDenied)
	}
	// The viewer may not manage the cluster.
	expect(t, kvnode(t, viewerEnv, "", "status"), cli.ExitDenied, "")
	expect(t, kvnode(t, viewerEnv, "", "region", "create", "more"), cli.ExitDenied, "")

	// No credentials: 401, with a hint.
	r = kvnode(t, viewer, "", "keys", "orders")
	if r.code != cli.ExitDenied || !strings.Contains(r.err, "401") || !strings.Contains(r.err, "KVNODE_USER") {
		t.Errorf("no credentials: exit %d (%s), want %d, a 401 and a hint", r.code, r.err, cli.ExitDenied)
	}
	// A wrong password.
	expect(t, kvnode(t, []string{urls, "KVNODE_USER=admin", "KVNODE_PASSWORD=nope"}, "", "keys", "orders"), cli.ExitDenied, "")
	// Two passwords, or a password without a user, are the command line's fault.
	expect(t, kvnode(t, admin, "", "keys", "orders", "--password-file", viewerFile), cli.ExitBadInput, "")
	expect(t, kvnode(t, []string{urls, "KVNODE_PASSWORD=x"}, "", "keys", "orders"), cli.ExitBadInput, "")
	expect(t, kvnode(t, viewer, "", "keys", "orders", "-u", "viewer", "--password-file", filepath.Join(dir, "absent")), cli.ExitBadInput, "")

	// Everything else works for the admin as without security.
	out := kvnode(t, admin, "", "status")
	if out.code != 0 || !strings.Contains(out.out, "orders  REPLICATE  1\n") {
		t.Errorf("admin's status: exit %d (%s):\n%s", out.code, out.err, out.out)
	}
}

// TestCommandsOverTLS: a member serving HTTPS with a test CA's
// certificate is reached with --cacert (or KVNODE_CACERT); without the CA
// the handshake fails and no member is reachable.
func TestCommandsOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca := nodetest.NewCA(t, "cli test CA")
	caPath := writeFile(t, dir, "ca.pem", string(ca.PEM))
	c := startCluster(t, 1, "https", func(name string, cfg *node.Config) {
		cfg.TLSCert, cfg.TLSKey = ca.Issue(t, dir, name)
	})
	bare := strings.TrimPrefix(c.urls[0], "https://")
	clientCert, clientKey := ca.Issue(t, dir, "client")
	waitReady(t, c.env, "--cacert", caPath)

	expect(t, kvnode(t, c.env, "", "region", "create", "orders", "--cacert", caPath), 0, "region orders created\n")
	// A bare host:port with a TLS option is https.
	expect(t, kvnode(t, nil, "", "keys", "orders", "--url", bare, "--cacert", caPath), 0, "KEY\n")
	expect(t, kvnode(t, append([]string{"KVNODE_CACERT=" + caPath}, c.env...), "", "region", "list"), 0, "NAME    TYPE\norders  REPLICATE\n")
	expect(t, kvnode(t, c.env, "", "keys", "orders", "--cacert", caPath, "--cert", clientCert, "--key", clientKey), 0, "KEY\n")
	expect(t, kvnode(t, c.env, "", "keys", "orders", "--insecure-skip-verify"), 0, "KEY\n")

	r := kvnode(t, c.env, "", "keys", "orders")
	if r.code != cli.ExitUnavailable || !strings.Contains(r.err, "certificate") {
		t.Errorf("without the CA: exit %d (%s), want %d and a certificate error", r.code, r.err, cli.ExitUnavailable)
	}
	other := writeFile(t, dir, "other.pem", string(nodetest.NewCA(t, "another CA").PEM))
	expect(t, kvnode(t, c.env, "", "keys", "orders", "--cacert", other), cli.ExitUnavailable, "")
	expect(t, kvnode(t, c.env, "", "keys", "orders", "--cert", clientCert), cli.ExitBadInput, "")
	expect(t, kvnode(t, c.env, "", "keys", "orders", "--cacert", filepath.Join(dir, "absent.pem")), cli.ExitBadInput, "")
	if err := os.WriteFile(filepath.Join(dir, "empty.pem"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	expect(t, kvnode(t, c.env, "", "keys", "orders", "--cacert", filepath.Join(dir, "empty.pem")), cli.ExitBadInput, "")
}

// TestCommandsWithClientCertificates: against a member whose REST port
// requires client certificates (--client-cert-auth), --cert and --key (or
// KVNODE_CERT and KVNODE_KEY) authenticate as the user the certificate's
// common name names, with that user's permissions; a certificate of no
// user, and none, exit "denied" with a message that says what to give;
// Basic credentials, when given too, decide.
func TestCommandsWithClientCertificates(t *testing.T) {
	dir := t.TempDir()
	security := securityFile(t, dir)
	ca := nodetest.NewCA(t, "cli test CA")
	caPath := writeFile(t, dir, "ca.pem", string(ca.PEM))
	c := startCluster(t, 1, "https", func(name string, cfg *node.Config) {
		cfg.TLSCert, cfg.TLSKey = ca.Issue(t, dir, name)
		cfg.TLSCA, cfg.ClientCertAuth, cfg.SecurityFile = caPath, true, security
	})
	adminCert, adminKey := ca.Issue(t, dir, "admin")
	viewerCert, viewerKey := ca.Issue(t, dir, "viewer")
	strangerCert, strangerKey := ca.Issue(t, dir, "stranger")
	admin := append([]string{"KVNODE_CACERT=" + caPath, "KVNODE_CERT=" + adminCert, "KVNODE_KEY=" + adminKey}, c.env...)
	waitReady(t, admin)

	expect(t, kvnode(t, admin, "", "region", "create", "orders"), 0, "region orders created\n")
	expect(t, kvnode(t, admin, "", "put", "orders", "1", `{"a":1}`), 0, "stored orders/1\n")
	viewer := []string{"--cacert", caPath, "--cert", viewerCert, "--key", viewerKey}
	expect(t, kvnode(t, c.env, "", append([]string{"get", "orders", "1"}, viewer...)...), 0, "KEY  VALUE\n1    {\"a\":1}\n")
	r := kvnode(t, c.env, "", append([]string{"delete", "orders", "1"}, viewer...)...)
	if r.code != cli.ExitDenied || !strings.Contains(r.err, "403") || !strings.Contains(r.err, "user viewer lacks DATA:WRITE") {
		t.Errorf("the viewer's delete: exit %d (%s), want %d and a 403 naming the user", r.code, r.err, cli.ExitDenied)
	}
	// Flags win over the variables: the viewer's certificate over the admin's.
	r = kvnode(t, admin, "", "delete", "orders", "1", "--cert", viewerCert, "--key", viewerKey)
	if r.code != cli.ExitDenied {
		t.Errorf("the viewer's certificate by flag over the admin's by variable: exit %d (%s), want %d", r.code, r.err, cli.ExitDenied)
	}
	// Basic credentials decide over the certificate.
	expect(t, kvnode(t, admin, "", "keys", "orders", "--user", "viewer", "--password", "viewer-pw"), 0, "KEY\n1\n")
	r = kvnode(t, admin, "", "delete", "orders", "1", "--user", "viewer", "--password", "viewer-pw")
	if r.code != cli.ExitDenied || !strings.Contains(r.err, "403") {
		t.Errorf("the admin's certificate with the viewer's password, delete: exit %d (%s), want %d and a 403", r.code, r.err, cli.ExitDenied)
	}

	r = kvnode(t, c.env, "", "keys", "orders", "--cacert", caPath, "--cert", strangerCert, "--key", strangerKey)
	if r.code != cli.ExitDenied || !strings.Contains(r.err, "401") || !strings.Contains(r.err, `common name "stranger" is not a user`) || strings.Contains(r.err, "no credentials were sent") {
		t.Errorf("a certificate of no user: exit %d (%s), want %d and a 401 saying why", r.code, r.err, cli.ExitDenied)
	}
	r = kvnode(t, c.env, "", "keys", "orders", "--cacert", caPath, "--user", "viewer", "--password", "viewer-pw")
	if r.code != cli.ExitDenied || !strings.Contains(r.err, "certificate") || !strings.Contains(r.err, "--cert") {
		t.Errorf("no certificate: exit %d (%s), want %d and a hint to give --cert and --key", r.code, r.err, cli.ExitDenied)
	}
	other := nodetest.NewCA(t, "another CA")
	otherCert, otherKey := other.Issue(t, t.TempDir(), "admin")
	r = kvnode(t, c.env, "", "keys", "orders", "--cacert", caPath, "--cert", otherCert, "--key", otherKey)
	if r.code != cli.ExitDenied || !strings.Contains(r.err, "certificate") {
		t.Errorf("a certificate of another CA: exit %d (%s), want %d and a certificate refusal", r.code, r.err, cli.ExitDenied)
	}
	// Nothing the refused ones tried changed anything.
	expect(t, kvnode(t, admin, "", "get", "orders", "1"), 0, "KEY  VALUE\n1    {\"a\":1}\n")
}
