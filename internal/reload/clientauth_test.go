package reload_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/reload"
	"github.com/kvnode/kvnode/node/nodetest"
)

// clientConfig is a REST client's TLS: it trusts ca for the server and,
// with signer, presents a fresh certificate signer issued for cn whatever
// CAs the server names (as curl --cert does; Go's own choice would keep a
// certificate of a CA not named to itself).
func clientConfig(t *testing.T, ca, signer *nodetest.CA, cn string) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	cfg := &tls.Config{RootCAs: pool, ServerName: "localhost"}
	if signer != nil {
		c, k := issueCN(t, signer, cn)
		pair, err := tls.X509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	}
	return cfg
}

// restServer is the REST port's material under --client-cert-auth: a
// certificate of ca, ca as the peers' CA and, unless nil, clientCA as the
// clients'.
func restServer(t *testing.T, ca, clientCA *nodetest.CA, obs reload.Observer) *reload.TLS {
	t.Helper()
	m := reload.NewTLS(nil, nil, obs)
	c, k := issue(t, ca, "localhost")
	if _, err := m.LoadCertificate([][]byte{c, k}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.LoadCA([][]byte{ca.PEM}); err != nil {
		t.Fatal(err)
	}
	if clientCA != nil {
		if _, err := m.LoadClientCA([][]byte{clientCA.PEM}); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestClientCertificatesRequired: under ClientAuthConfig a client with a
// certificate of the CA in force is let in; one without a certificate,
// and one with a certificate of another CA, are refused at the handshake,
// the latter reported with its subject; the request for a certificate
// names the CA, so that a browser can choose.
func TestClientCertificatesRequired(t *testing.T) {
	ca, other := nodetest.NewCA(t, "cluster CA"), nodetest.NewCA(t, "another CA")
	obs := newObserver()
	addr, verdicts := serve(t, restServer(t, ca, nil, obs).ClientAuthConfig())

	if err := handshake(t, addr, verdicts, clientConfig(t, ca, ca, "alice")); err != nil {
		t.Fatalf("a client certificate of the CA: %v", err)
	}
	if err := handshake(t, addr, verdicts, clientConfig(t, ca, nil, "")); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("no client certificate: %v, want a refusal", err)
	}
	err := handshake(t, addr, verdicts, clientConfig(t, ca, other, "mallory"))
	if err == nil || !strings.Contains(err.Error(), "CN=mallory") || !strings.Contains(err.Error(), "unknown authority") {
		t.Errorf("a certificate of another CA: %v, want a refusal naming its subject and why", err)
	}
	if n := obs.clientRefusals(); n != 1 {
		t.Errorf("client certificates reported refused: %d, want 1 (the other CA's; none sent is the TLS library's refusal)", n)
	}

	// The request names the clients' CA.
	var asked [][]byte
	cfg := clientConfig(t, ca, nil, "")
	cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		asked = cri.AcceptableCAs
		return &tls.Certificate{}, nil
	}
	_ = handshake(t, addr, verdicts, cfg)
	if len(asked) != 1 || !strings.Contains(string(asked[0]), "cluster CA") {
		t.Errorf("the certificate request names %q, want the cluster CA", asked)
	}
}

// TestClientCAReload: with a clients' CA of its own, the REST port takes
// the clients' certificates of that CA only (the peers' CA is another
// matter), and a new clients' CA applies to the next handshake, resumed
// sessions included: a client that resumes a session its certificate of
// the old CA opened is refused.
func TestClientCAReload(t *testing.T) {
	ca, clientsA, clientsB := nodetest.NewCA(t, "cluster CA"), nodetest.NewCA(t, "clients A"), nodetest.NewCA(t, "clients B")
	server := restServer(t, ca, clientsA, nil)
	addr, verdicts := serve(t, server.ClientAuthConfig())

	if err := handshake(t, addr, verdicts, clientConfig(t, ca, ca, "member")); err == nil {
		t.Error("a certificate of the peers' CA was let in on the REST port with a clients' CA of its own")
	}
	// A client that keeps its sessions, as browsers and curl do.
	resuming := clientConfig(t, ca, clientsA, "alice")
	resuming.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	dial := func() (resumed bool, err error) {
		t.Helper()
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, resuming)
		if err == nil {
			defer conn.Close()
			// TLS 1.3 sends the session ticket after the handshake: read
			// the server's "ok" to take it, and to learn the verdict.
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = io.ReadFull(conn, make([]byte, 2))
			resumed = conn.ConnectionState().DidResume
		}
		select {
		case serverErr := <-verdicts:
			if err == nil {
				err = serverErr
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the server reported no handshake")
		}
		return resumed, err
	}
	if _, err := dial(); err != nil {
		t.Fatalf("a client of the clients' CA: %v", err)
	}
	if resumed, err := dial(); err != nil || !resumed {
		t.Fatalf("the same client again: resumed %v, %v; want a resumed session", resumed, err)
	}

	if _, err := server.LoadClientCA([][]byte{clientsB.PEM}); err != nil {
		t.Fatal(err)
	}
	if resumed, err := dial(); err == nil {
		t.Errorf("a session of the old clients' CA was let in after the CA changed (resumed %v)", resumed)
	}
	if err := handshake(t, addr, verdicts, clientConfig(t, ca, clientsA, "alice")); err == nil {
		t.Error("a certificate of the old clients' CA was let in after the CA changed")
	}
	if err := handshake(t, addr, verdicts, clientConfig(t, ca, clientsB, "bob")); err != nil {
		t.Errorf("a certificate of the new clients' CA: %v", err)
	}
	// The internal port still takes the peers' CA.
	iaddr, iverdicts := serve(t, server.InternalServerConfig())
	peer := restServer(t, ca, nil, nil)
	if err := handshake(t, iaddr, iverdicts, peer.InternalClientConfig()); err != nil {
		t.Errorf("a peer on the internal port after the clients' CA changed: %v", err)
	}
}
