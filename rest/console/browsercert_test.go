//go:build browser

package console_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// The console and Swagger UI in a browser that holds a client
// certificate, against a node whose REST port requires one
// (--client-cert-auth). Chromium takes client certificates from the NSS
// database in $HOME/.pki/nssdb (made here with certutil and pk12util, of
// Debian's libnss3-tools, from a PKCS#12 file openssl writes) and picks
// one without asking where its profile's auto_select_certificate setting
// names the issuer for the origin.

// certNode starts a node with HTTPS, --client-cert-auth against ca and a
// security file (admin may do everything, viewer only read), waits until
// it is ready, and returns its base URL and an admin's client to it.
func certNode(t *testing.T, ca *nodetest.CA, dir string) (string, *http.Client) {
	t.Helper()
	secPath, caPath := securityFile(t), filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caPath, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c := nodetest.New(t)
	c.Tune = func(name string, cfg *node.Config) {
		cfg.TLSCert, cfg.TLSKey = ca.Issue(t, dir, name)
		cfg.TLSCA, cfg.ClientCertAuth, cfg.SecurityFile = caPath, true, secPath
	}
	n := c.Start("solo", 1)
	certPath, keyPath := ca.Issue(t, t.TempDir(), adminUser)
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	admin := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}}
	base := "https://" + n.HTTPAddr()
	waitfor.Cond(t, 30*time.Second, "the node to be ready", func() bool {
		resp, err := admin.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base, admin
}

// call sends one request with client, wanting status want.
func call(t *testing.T, client *http.Client, method, url, body string, want int) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("%s %s = %d %s, want %d", method, url, resp.StatusCode, data, want)
	}
}

// certBrowserOptions give Chromium a home whose NSS database trusts ca and
// holds a client certificate ca issued for cn, and a profile that picks
// certificates of ca for origin without asking.
func certBrowserOptions(t *testing.T, ca *nodetest.CA, caName, cn, origin string) []chromedp.ExecAllocatorOption {
	t.Helper()
	tools := func(name string, args ...string) {
		t.Helper()
		if _, err := exec.LookPath(name); err != nil {
			t.Fatalf("%s not found: the client certificate test needs openssl and Debian's libnss3-tools (apt-get install -y openssl libnss3-tools)", name)
		}
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	dir := t.TempDir()
	certPath, keyPath := ca.Issue(t, dir, cn)
	caPath, p12 := filepath.Join(dir, "ca.pem"), filepath.Join(dir, cn+".p12")
	if err := os.WriteFile(caPath, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	nssdb := "sql:" + filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(filepath.Join(home, ".pki", "nssdb"), 0o700); err != nil {
		t.Fatal(err)
	}
	tools("certutil", "-N", "-d", nssdb, "--empty-password")
	tools("certutil", "-A", "-d", nssdb, "-n", caName, "-t", "C,,", "-i", caPath)
	tools("openssl", "pkcs12", "-export", "-in", certPath, "-inkey", keyPath, "-out", p12, "-passout", "pass:")
	tools("pk12util", "-i", p12, "-d", nssdb, "-W", "")

	profile := t.TempDir()
	prefs, err := json.Marshal(map[string]any{"profile": map[string]any{"content_settings": map[string]any{"exceptions": map[string]any{
		"auto_select_certificate": map[string]any{origin + ",*": map[string]any{
			"setting": map[string]any{"filters": []any{map[string]any{"ISSUER": map[string]string{"CN": caName}}}},
		}},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(profile, "Default"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(profile, "Default", "Preferences"), prefs, 0o600); err != nil {
		t.Fatal(err)
	}
	return []chromedp.ExecAllocatorOption{chromedp.Env("HOME=" + home), chromedp.UserDataDir(profile)}
}

// TestConsoleWithClientCertificate: under --client-cert-auth the console
// signs in with the browser's certificate, without a form: its common
// name is the user, whose permissions apply to every view (the viewer
// reads, watches, and is refused a delete with the API's cause); Swagger
// UI's "Try it out" goes through with the certificate too. A certificate
// that names no user gets the sign-in form, with a word on why, and a
// user and password then work over it.
func TestConsoleWithClientCertificate(t *testing.T) {
	browserPath := findChromium(t)
	const caName = "console test CA"
	ca := nodetest.NewCA(t, caName)
	base, admin := certNode(t, ca, t.TempDir())
	call(t, admin, "POST", base+"/management/v1/regions", `{"name":"orders","type":"REPLICATE"}`, 201)
	call(t, admin, "PUT", base+"/kv/v1/orders/1", `{"customer":"ann","total":10.0}`, 200)
	shots := screenshotDir(t)

	b := newBrowser(t, browserPath, shots, certBrowserOptions(t, ca, caName, viewerUser, base)...)
	b.run(chromedp.Navigate(base + "/"))
	b.waitJS("the console signed in by the certificate", `!!document.querySelector('#by-certificate')`)
	if eval[bool](b, `!!document.querySelector('#login-form, #sign-out')`) {
		t.Error("signed in by a certificate, the console shows a sign-in form or a sign-out button")
	}
	b.waitText(".topbar", "Client certificate")
	b.waitText("#user-name", viewerUser)
	b.waitText("#members", "needs CLUSTER:MANAGE")
	b.shot("30-certificate-overview")
	b.goTo("#/data/orders")
	b.run(chromedp.WaitVisible(chromedp.CSS(`#entries-table tr[data-key="1"]`)), chromedp.Click(chromedp.CSS(`#entries-table tr[data-key="1"]`)))
	b.waitText("#detail-key", "1")
	b.run(chromedp.Click(chromedp.CSS("#delete-entry")), chromedp.WaitVisible(chromedp.CSS(".backdrop button.danger")),
		chromedp.Click(chromedp.CSS(".backdrop button.danger")))
	b.waitText("#data-error", "lacks DATA:WRITE:orders:1")
	b.shot("31-certificate-forbidden")
	call(t, admin, "GET", base+"/kv/v1/orders/1", "", 200)

	// The live view streams with the certificate too.
	b.goTo("#/watch/orders")
	b.waitJS("orders in the watch form", `[...document.querySelectorAll('#watch-region option')].some(o => o.value === 'orders')`)
	b.choose("#watch-region", "orders")
	b.run(chromedp.Click(chromedp.CSS("#watch-start")))
	b.waitText("#watch-state", "live")
	call(t, admin, "PUT", base+"/kv/v1/orders/w1", `{"live":true}`, 200)
	b.waitJS("the create of w1", `[...document.querySelectorAll('#watch-rows tr')].some(r => r.dataset.type === 'create' && r.textContent.includes('w1'))`)
	b.run(chromedp.Click(chromedp.CSS("#watch-stop")))

	// Swagger UI: "Try it out" on GET /kv/v1, answered for the viewer.
	b.run(chromedp.Navigate(base + "/docs/"))
	op := "#operations-regions-listRegions"
	b.run(chromedp.WaitVisible(chromedp.CSS(op+" .opblock-summary")), chromedp.Click(chromedp.CSS(op+" .opblock-summary")),
		chromedp.WaitVisible(chromedp.CSS(op+" .try-out__btn")), chromedp.Click(chromedp.CSS(op+" .try-out__btn")),
		chromedp.WaitVisible(chromedp.CSS(op+" .execute")), chromedp.Click(chromedp.CSS(op+" .execute")))
	b.waitText(op+" .live-responses-table tbody .response-col_status", "200")
	b.waitText(op+" .live-responses-table tbody .response-col_description", `"orders"`)
	b.shot("32-swagger-certificate")
	b.checkNoPageErrors()

	// A certificate of the same CA that names no user: the form, and a
	// password that works over it.
	s := newBrowser(t, browserPath, shots, certBrowserOptions(t, ca, caName, "stranger", base)...)
	s.run(chromedp.Navigate(base + "/"))
	s.run(chromedp.WaitVisible(chromedp.CSS("#login-form")))
	s.waitText("#login", "client certificate (stranger) names no user")
	s.nothingButLogin()
	s.shot("33-certificate-no-user")
	s.run(chromedp.SendKeys(chromedp.CSS("#login-user"), adminUser), chromedp.SendKeys(chromedp.CSS("#login-password"), adminPassword),
		chromedp.Click(chromedp.CSS("#login-submit")), chromedp.WaitVisible(chromedp.CSS("#sign-out")))
	s.waitText("#user-name", adminUser)
	s.goTo("#/data/orders")
	s.run(chromedp.WaitVisible(chromedp.CSS(`#entries-table tr[data-key="1"]`)))
	s.checkNoPageErrors()
}
