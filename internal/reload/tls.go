package reload

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// TLS is a member's TLS material: its certificate and key (HTTPS on the
// REST port, and its identity on the internal port), the CA its peers'
// certificates must chain to and, with client certificates on the REST
// port, the clients' CA (the peers' CA when none is loaded). Each is
// replaced whole (LoadCertificate, LoadCA, LoadClientCA) and read at every
// handshake by the configurations it builds, so a replacement applies to
// the next connection. Its methods are safe for concurrent use.
type TLS struct {
	cert     atomic.Pointer[tls.Certificate]
	ca       atomic.Pointer[x509.CertPool]
	clientCA atomic.Pointer[x509.CertPool]
	peers    PeerNames
	log      *slog.Logger
	obs      Observer
	// refused keeps the log of refusals to one line a minute per kind.
	refused refusals
}

// NewTLS returns empty material: load a certificate (and a CA for mutual
// TLS) before building configurations from it. peers, when not empty,
// limits the internal port to certificates carrying one of its names; log
// and obs hear of every peer certificate refused (either may be nil).
func NewTLS(peers PeerNames, log *slog.Logger, obs Observer) *TLS {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &TLS{peers: peers, log: log, obs: obs}
}

// LoadCertificate puts a certificate and its key in force (contents: the
// PEM certificate chain, then the PEM key), a File's Load. A key that does
// not match the certificate, an empty or unparsable file is refused.
func (t *TLS) LoadCertificate(contents [][]byte) ([]slog.Attr, error) {
	if len(contents) != 2 {
		return nil, fmt.Errorf("want a certificate and a key, got %d files", len(contents))
	}
	cert, err := tls.X509KeyPair(contents[0], contents[1])
	if err != nil {
		// X509KeyPair's errors name what is wrong (no PEM data, a key
		// that does not match) and never quote the key.
		return nil, err
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, err
		}
		cert.Leaf = leaf
	}
	t.cert.Store(&cert)
	return []slog.Attr{
		slog.String("serial", leaf.SerialNumber.Text(16)),
		slog.String("subject", leaf.Subject.String()),
		slog.Any("dns_names", leaf.DNSNames),
		slog.Time("not_after", leaf.NotAfter),
	}, nil
}

// LoadCA puts a CA bundle in force (contents: one PEM file with one or
// more certificates; during a CA rotation it holds the old CA and the
// new), a File's Load.
func (t *TLS) LoadCA(contents [][]byte) ([]slog.Attr, error) {
	return loadPool(&t.ca, contents)
}

// LoadClientCA puts in force the CA bundle REST clients' certificates must
// chain to (ClientAuthConfig), when it is not the peers' (LoadCA), a
// File's Load.
func (t *TLS) LoadClientCA(contents [][]byte) ([]slog.Attr, error) {
	return loadPool(&t.clientCA, contents)
}

// loadPool parses one PEM file of CA certificates into dst.
func loadPool(dst *atomic.Pointer[x509.CertPool], contents [][]byte) ([]slog.Attr, error) {
	if len(contents) != 1 {
		return nil, fmt.Errorf("want one CA file, got %d", len(contents))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(contents[0]) {
		return nil, errors.New("no PEM certificate in the file")
	}
	dst.Store(pool)
	return []slog.Attr{slog.Int("certificates", countCerts(contents[0]))}, nil
}

// countCerts counts the PEM certificates in a bundle, for the log.
func countCerts(pem []byte) int {
	return strings.Count(string(pem), "-----BEGIN CERTIFICATE-----")
}

// Certificate is the certificate in force (nil before LoadCertificate).
func (t *TLS) Certificate() *tls.Certificate { return t.cert.Load() }

// getCertificate serves the certificate in force, to a client's hello or
// a server's request for a client certificate.
func (t *TLS) getCertificate() (*tls.Certificate, error) {
	c := t.cert.Load()
	if c == nil {
		return nil, errors.New("no certificate loaded")
	}
	return c, nil
}

// ServerConfig is the REST port's TLS: the certificate in force at each
// handshake.
func (t *TLS) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return t.getCertificate() },
	}
}

// ClientAuthConfig is the REST port's TLS under --client-cert-auth:
// ServerConfig's certificate, and a client certificate required at every
// handshake that chains, for client use, to the clients' CA in force (the
// peers' CA when no client CA was loaded). The request for it lists that
// CA's names, so that a browser offers the right certificate. A refusal
// is reported; the HTTP server logs the handshake's error, which names
// the certificate's subject.
func (t *TLS) ClientAuthConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, err := t.getCertificate()
			if err != nil {
				return nil, err
			}
			roots := t.clientRoots()
			if roots == nil {
				return nil, errors.New("no client CA loaded")
			}
			return &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{*cert},
				// No certificate: the TLS library refuses the handshake
				// with the alert that says so (certificate_required in
				// TLS 1.3). The chain is verified by verifyClient, at
				// every handshake (resumed ones too) and against the CA in
				// force now; ClientCAs only names it in the request.
				ClientAuth:       tls.RequireAnyClientCert,
				ClientCAs:        roots,
				VerifyConnection: t.verifyClient,
			}, nil
		},
	}
}

// clientRoots is the CA REST clients' certificates must chain to.
func (t *TLS) clientRoots() *x509.CertPool {
	if p := t.clientCA.Load(); p != nil {
		return p
	}
	return t.ca.Load()
}

// verifyClient checks a REST client's certificate: a chain, for client
// use, to the clients' CA in force.
func (t *TLS) verifyClient(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("no client certificate (--client-cert-auth requires one)")
	}
	leaf := cs.PeerCertificates[0]
	if err := verifyChain(cs.PeerCertificates, t.clientRoots(), x509.ExtKeyUsageClientAuth); err != nil {
		if t.obs != nil {
			t.obs.ClientRefused()
		}
		return fmt.Errorf("the client's certificate (%s, serial %s) is not one the client CA accepts: %w", leaf.Subject, leaf.SerialNumber.Text(16), err)
	}
	return nil
}

// verifyChain verifies certs[0], with certs[1:] as intermediates, against
// roots for usage, now.
func verifyChain(certs []*x509.Certificate, roots *x509.CertPool, usage x509.ExtKeyUsage) error {
	if roots == nil {
		return errors.New("no CA loaded")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}, CurrentTime: time.Now()})
	return err
}

// InternalServerConfig is the internal port's side of mutual TLS: every
// client must present a certificate that chains to the CA in force and,
// with PeerNames, carries an allowed name. Each handshake gets a
// configuration of its own, so that a refusal is logged with the address
// it came from.
func (t *TLS) InternalServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			cert, err := t.getCertificate()
			if err != nil {
				return nil, err
			}
			remote := ""
			if hello.Conn != nil {
				remote = hello.Conn.RemoteAddr().String()
			}
			return &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{*cert},
				// The chain is verified by verifyPeer, against the CA in
				// force now (a ClientCAs pool would be fixed at start).
				ClientAuth:       tls.RequireAnyClientCert,
				VerifyConnection: t.verifyPeer("inbound", remote, x509.ExtKeyUsageClientAuth),
			}, nil
		},
	}
}

// InternalClientConfig is the side of mutual TLS this member dials
// others with: it presents the certificate in force and checks the
// other's as InternalServerConfig does.
func (t *TLS) InternalClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion:           tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return t.getCertificate() },
		// verifyPeer checks the chain and the names; the host name is not
		// checked against the address dialled (see the package's doc).
		InsecureSkipVerify: true,
		VerifyConnection:   t.verifyPeer("outbound", "", x509.ExtKeyUsageAny),
	}
}

// verifyPeer checks a peer's certificate on the internal port: a chain to
// the CA in force with usage, then its names. A refusal is logged with the
// names offered, and reported. It is a VerifyConnection, not a
// VerifyPeerCertificate, because Go calls the latter only on full
// handshakes: a session resumed from a ticket would skip it.
func (t *TLS) verifyPeer(direction, remote string, usage x509.ExtKeyUsage) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the peer sent no certificate")
		}
		leaf := cs.PeerCertificates[0]
		roots := t.ca.Load()
		if roots == nil {
			return errors.New("no CA loaded")
		}
		if err := verifyChain(cs.PeerCertificates, roots, usage); err != nil {
			err = fmt.Errorf("the peer's certificate is not from the cluster's CA: %w", err)
			t.refuse("ca", direction, remote, leaf, err)
			return err
		}
		if !t.peers.Allow(leaf) {
			err := fmt.Errorf("the peer's certificate names %v, none of which --peer-names %v allows", leaf.DNSNames, []string(t.peers))
			t.refuse("name", direction, remote, leaf, err)
			return err
		}
		return nil
	}
}

// refusalLogEvery is how often the same refusal (reason, direction and
// names) is logged: a refused member is dialled again and again (Raft
// retries, gossip-driven placement), many times a second, and every
// refusal is counted in the metric anyway.
const refusalLogEvery = time.Minute

// refusals remembers when each kind of refusal was last logged and how
// many were not logged since.
type refusals struct {
	mu   sync.Mutex
	seen map[string]*refusal
}

type refusal struct {
	logged     time.Time
	suppressed int
}

// maxRefusalKinds bounds refusals' memory: a flood of certificates with
// ever new names forgets the old ones (and logs again).
const maxRefusalKinds = 1024

// admit reports whether a refusal of kind key should be logged now, and
// how many of its kind went unlogged before it.
func (r *refusals) admit(key string, now time.Time) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil || len(r.seen) >= maxRefusalKinds {
		r.seen = map[string]*refusal{}
	}
	e := r.seen[key]
	if e == nil {
		r.seen[key] = &refusal{logged: now}
		return true, 0
	}
	if now.Sub(e.logged) < refusalLogEvery {
		e.suppressed++
		return false, 0
	}
	n := e.suppressed
	e.logged, e.suppressed = now, 0
	return true, n
}

// refuse logs (at most once a minute for the same reason, direction and
// names) and reports (always) a refused peer certificate.
func (t *TLS) refuse(reason, direction, remote string, leaf *x509.Certificate, err error) {
	if t.obs != nil {
		t.obs.PeerRefused(reason)
	}
	key := reason + "|" + direction + "|" + strings.Join(leaf.DNSNames, ",") + "|" + leaf.Subject.String()
	ok, suppressed := t.refused.admit(key, time.Now())
	if !ok {
		return
	}
	args := []any{"reason", reason, "direction", direction, "dns_names", leaf.DNSNames,
		"subject", leaf.Subject.String(), "serial", leaf.SerialNumber.Text(16), "error", err}
	if remote != "" {
		args = append(args, "remote", remote)
	}
	if suppressed > 0 {
		args = append(args, "unlogged_since_last", suppressed)
	}
	t.log.Warn("refused a peer's certificate on the internal port", args...)
}
