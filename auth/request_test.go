package auth

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestIdentify: Basic credentials decide when a request carries them,
// over a certificate too; without them, with certs, the certificate's
// common name is the user, outside the failed-login limit; a request with
// neither is no login at all. Each refusal has its reason for the
// metrics.
func TestIdentify(t *testing.T) {
	a := New(testFile(t))
	a.SetFailureLimit(1, time.Minute)
	// req is a request from one client, with a certificate of cn ("-":
	// none) and Basic credentials user:password when given.
	req := func(cn string, basic ...string) *http.Request {
		r := httptest.NewRequest("GET", "https://kvnode/kv/v1", nil)
		r.RemoteAddr = "192.0.2.1:5555"
		if cn != "-" {
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{Subject: pkix.Name{CommonName: cn}}}}
		}
		if len(basic) == 2 {
			r.SetBasicAuth(basic[0], basic[1])
		}
		return r
	}
	for _, c := range []struct {
		what         string
		r            *http.Request
		certs        bool
		user, method string
		err, refusal string
	}{
		{"a certificate of a user", req("admin"), true, "admin", MethodCertificate, "", ""},
		{"a certificate of no user", req("stranger"), true, "", MethodCertificate, `common name "stranger" is not a user`, "unknown_certificate_user"},
		{"a certificate without a name", req(""), true, "", MethodCertificate, "no common name", "unknown_certificate_user"},
		{"Basic over a certificate of no user", req("stranger", "admin", "admin-pw"), true, "admin", MethodBasic, "", ""},
		{"a wrong password over a user's certificate", req("admin", "admin", "wrong"), true, "", MethodBasic, "wrong user name or password", "bad_credentials"},
		{"the same client's right password, throttled", req("-", "admin", "admin-pw"), true, "", MethodBasic, "too many failed logins", "throttled"},
		{"a certificate from the throttled client", req("admin"), true, "admin", MethodCertificate, "", ""},
		{"a certificate no listener verified", req("admin"), false, "", "", "send HTTP Basic credentials", ""},
		{"nothing", req("-"), true, "", "", "send HTTP Basic credentials or a client certificate", ""},
	} {
		pr, login, err := a.Identify(c.r, c.certs)
		if login.Method != c.method || login.Client != "192.0.2.1" {
			t.Errorf("%s: login %+v, want method %q from 192.0.2.1", c.what, login, c.method)
		}
		if c.err == "" {
			if err != nil || pr == nil || pr.Name != c.user {
				t.Errorf("%s: %v, %v; want user %s", c.what, pr, err, c.user)
			}
			continue
		}
		if pr != nil || err == nil || !strings.Contains(err.Error(), c.err) ||
			!errors.Is(err, ErrUnauthenticated) && !errors.Is(err, ErrThrottled) {
			t.Errorf("%s: %v, %v; want a refusal saying %q", c.what, pr, err, c.err)
			continue
		}
		if c.refusal != "" && login.Refusal(err) != c.refusal {
			t.Errorf("%s: refusal reason %q, want %q", c.what, login.Refusal(err), c.refusal)
		}
	}
}
