package rest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/auth"
)

// clientCertificate is a self-signed client certificate whose subject's
// common name is cn (the handshake's verification is the listener's
// business, package reload's; here the server takes any certificate).
func clientCertificate(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestClientCertificateIdentity: with ClientCertAuth, a request without
// Basic credentials is the user its client certificate's common name
// names, with that user's permissions: 2xx for what it may do, 403 with
// the API's error body for what it may not, 401 for a name that is no
// user (logged and counted, never throttled). Basic credentials, when
// present, decide over the certificate, a wrong password included.
// Every answer names the certificate's common name, for the console.
// Without ClientCertAuth a certificate identifies no one.
func TestClientCertificateIdentity(t *testing.T) {
	st := newTestStore(t)
	a := auth.New(securityFile(t))
	a.SetFailureLimit(1, time.Minute) // a certificate must never be throttled
	obs := &recordingObserver{}
	logs := &syncBuffer{}
	newServer := func(certs bool) *httptest.Server {
		srv := httptest.NewUnstartedServer(validated(t, New(Config{Auth: a, ClientCertAuth: certs, Observer: obs,
			Logger: slog.New(slog.NewTextHandler(logs, nil))}, st, nil, nil).Handler()))
		srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv
	}
	srv := newServer(true)
	certs := map[string]tls.Certificate{}
	for _, cn := range []string{"admin", "reader", "stranger", ""} {
		certs[cn] = clientCertificate(t, cn)
	}
	call := func(srv *httptest.Server, cn, basic, method, path, body string) response {
		t.Helper()
		tr := srv.Client().Transport.(*http.Transport).Clone()
		tr.TLSClientConfig.Certificates = []tls.Certificate{certs[cn]}
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if user, password, ok := strings.Cut(basic, ":"); ok {
			req.SetBasicAuth(user, password)
		}
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("%s %s as %q: %v", method, path, cn, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return response{status: resp.StatusCode, header: resp.Header, body: string(data)}
	}
	cause := func(r response) string {
		var doc struct {
			Cause string `json:"cause"`
		}
		_ = json.Unmarshal([]byte(r.body), &doc)
		return doc.Cause
	}

	if r := call(srv, "admin", "", "POST", "/management/v1/regions", `{"name":"orders","type":"REPLICATE"}`); r.status != 201 {
		t.Fatalf("the admin's certificate creates a region: %d %s", r.status, r.body)
	}
	if r := call(srv, "reader", "", "GET", "/kv/v1/orders", ""); r.status != 200 || r.header.Get("Kvnode-Client-Certificate-CN") != "reader" {
		t.Errorf("the reader's certificate reads: %d %s, Kvnode-Client-Certificate-CN %q", r.status, r.body, r.header.Get("Kvnode-Client-Certificate-CN"))
	}
	r := call(srv, "reader", "", "PUT", "/kv/v1/orders/k", `{"a":1}`)
	if r.status != 403 || !strings.Contains(cause(r), "user reader lacks DATA:WRITE:orders:k") {
		t.Errorf("the reader's certificate writes: %d %s, want 403 naming the user and the permission", r.status, r.body)
	}
	if r := call(srv, "admin", "", "GET", "/kv/v1/orders/k", ""); r.status != 404 {
		t.Errorf("after the refused write, GET orders/k = %d %s, want 404", r.status, r.body)
	}
	for range 3 { // past the failed-login limit of 1: never a 429
		r = call(srv, "stranger", "", "GET", "/kv/v1/orders", "")
		if r.status != 401 || !strings.Contains(cause(r), `common name "stranger" is not a user of the security file`) {
			t.Errorf("a certificate of no user: %d %s, want 401 saying so", r.status, r.body)
		}
	}
	if r = call(srv, "", "", "GET", "/kv/v1/orders", ""); r.status != 401 || !strings.Contains(cause(r), "no common name") {
		t.Errorf("a certificate without a common name: %d %s, want 401 saying so", r.status, r.body)
	}
	if obs.unknownCert != 4 || obs.bad != 0 || obs.throttled != 0 {
		t.Errorf("failed logins observed: %d unknown certificate users, %d bad credentials, %d throttled; want 4, 0, 0", obs.unknownCert, obs.bad, obs.throttled)
	}
	if !strings.Contains(logs.String(), `msg="authentication failed" user=stranger by=certificate client=127.0.0.1`) {
		t.Errorf("no log of the refused certificate with its name and client:\n%s", logs)
	}

	// Basic credentials win over the certificate, both ways.
	if r = call(srv, "reader", "admin:admin-pw", "PUT", "/kv/v1/orders/k", `{"a":1}`); r.status != 200 {
		t.Errorf("the reader's certificate with the admin's password: %d %s, want the admin's 200", r.status, r.body)
	}
	if r = call(srv, "admin", "admin:wrong", "GET", "/kv/v1/orders", ""); r.status != 401 || r.header.Get("WWW-Authenticate") == "" {
		t.Errorf("the admin's certificate with a wrong password: %d %s, want 401 (the password decides)", r.status, r.body)
	}
	if obs.bad != 1 {
		t.Errorf("the wrong password was counted %d times as bad credentials, want 1", obs.bad)
	}

	// A listener that does not verify certificates: they identify no one.
	plain := newServer(false)
	if r = call(plain, "admin", "", "GET", "/kv/v1/orders", ""); r.status != 401 || !strings.Contains(cause(r), "send HTTP Basic credentials") || r.header.Get("Kvnode-Client-Certificate-CN") != "" {
		t.Errorf("a certificate without ClientCertAuth: %d %s (Kvnode-Client-Certificate-CN %q), want 401 and no name", r.status, r.body, r.header.Get("Kvnode-Client-Certificate-CN"))
	}
	// The probes need nothing but the handshake.
	if r = call(srv, "stranger", "", "GET", "/readyz", ""); r.status != 200 {
		t.Errorf("GET /readyz with a certificate of no user: %d %s", r.status, r.body)
	}
}
