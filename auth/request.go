package auth

import (
	"errors"
	"fmt"
	"net"
	"net/http"
)

// How a request authenticated, for logs and metrics.
const (
	// MethodBasic is HTTP Basic credentials: a user name and a password.
	MethodBasic = "basic"
	// MethodCertificate is a client certificate the TLS handshake
	// verified, whose subject's common name names the user.
	MethodCertificate = "certificate"
)

// Login is who a request said it was, and how: what a refused login is
// logged with (never the password).
type Login struct {
	// User is the HTTP Basic user name, or the certificate's common name.
	User string
	// Method is MethodBasic or MethodCertificate; empty when the request
	// carried no credentials at all (not a login: nothing to log).
	Method string
	// Client is the client's address without the port, the failed-login
	// limit's key.
	Client string
}

// Identify authenticates an HTTP request. HTTP Basic credentials, when it
// carries them, decide, even over a client certificate (Authenticate: a
// wrong password is refused and counts toward the failed-login limit).
// Without them, and with certs, the common name of the client certificate
// its TLS connection presented names the user (User), without a password.
// Identify does not verify that certificate: certs is for a listener whose
// handshake required one and verified it against the clients' CA
// (node's --client-cert-auth). A request with neither is
// ErrUnauthenticated, with an empty Login.Method.
func (a *Authenticator) Identify(r *http.Request, certs bool) (*Principal, Login, error) {
	l := Login{Client: r.RemoteAddr}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		l.Client = host
	}
	if user, password, ok := r.BasicAuth(); ok {
		l.User, l.Method = user, MethodBasic
		pr, err := a.Authenticate(l.Client, user, password)
		return pr, l, err
	}
	if certs && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		l.User, l.Method = r.TLS.PeerCertificates[0].Subject.CommonName, MethodCertificate
		pr, err := a.User(l.User)
		return pr, l, err
	}
	if certs {
		return nil, l, fmt.Errorf("%w: send HTTP Basic credentials or a client certificate", ErrUnauthenticated)
	}
	return nil, l, fmt.Errorf("%w: send HTTP Basic credentials", ErrUnauthenticated)
}

// User is the principal of the user called name, authenticated without a
// password: by a client certificate that the TLS handshake verified and
// whose common name is name. It is outside the failed-login limit, which
// slows the guessing of passwords: here there is nothing to guess, since
// trying a name takes a certificate the clients' CA issued for it, and a
// misconfigured client's refusals must not lock out the password users
// behind the same address. An unknown name (or none) is
// ErrUnauthenticated.
func (a *Authenticator) User(name string) (*Principal, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: the client certificate has no common name to name a user", ErrUnauthenticated)
	}
	if acc := a.current.Load().byName[name]; acc != nil {
		return acc.principal, nil
	}
	return nil, fmt.Errorf("%w: the client certificate's common name %q is not a user of the security file", ErrUnauthenticated, name)
}

// Refusal names why a login of l's failed with err, for metrics:
// "throttled" (too many failed logins from the client's address),
// "unknown_certificate_user" (a certificate whose common name is no user)
// or "bad_credentials" (an unknown user or a wrong password).
func (l Login) Refusal(err error) string {
	switch {
	case errors.Is(err, ErrThrottled):
		return "throttled"
	case l.Method == MethodCertificate:
		return "unknown_certificate_user"
	}
	return "bad_credentials"
}
