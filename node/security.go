package node

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
)

// tlsSetup is the TLS of a node: the REST port's server side, and mutual
// TLS on the internal port (both sides).
type tlsSetup struct {
	rest           *tls.Config // nil: plain HTTP
	internalServer *tls.Config // nil: plain TCP
	internalClient *tls.Config
}

// loadTLS reads --tls-cert, --tls-key and --tls-ca. The certificate serves
// the REST port; with a CA it also authenticates this node on the internal
// port, where every peer must present a certificate that CA signed.
//
// Peers are checked by chain, not by host name: members dial each other at
// addresses gossip advertises (often IPs that change as pods move), so the
// CA is the trust boundary, as in Consul's default.
func loadTLS(cfg Config) (tlsSetup, error) {
	var ts tlsSetup
	if cfg.TLSCert == "" && cfg.TLSKey == "" {
		if cfg.TLSCA != "" {
			return ts, errors.New("--tls-ca needs --tls-cert and --tls-key: the node's own certificate for mutual TLS")
		}
		return ts, nil
	}
	if cfg.TLSCert == "" || cfg.TLSKey == "" {
		return ts, errors.New("--tls-cert and --tls-key go together")
	}
	cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return ts, fmt.Errorf("load --tls-cert/--tls-key: %w", err)
	}
	ts.rest = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if cfg.TLSCA == "" {
		return ts, nil
	}
	pem, err := os.ReadFile(cfg.TLSCA)
	if err != nil {
		return ts, fmt.Errorf("read --tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return ts, fmt.Errorf("--tls-ca %s holds no PEM certificate", cfg.TLSCA)
	}
	verify := func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
		if len(rawCerts) == 0 {
			return errors.New("the peer sent no certificate")
		}
		leaf, err := x509.ParseCertificate(rawCerts[0])
		if err != nil {
			return err
		}
		inter := x509.NewCertPool()
		for _, raw := range rawCerts[1:] {
			if c, err := x509.ParseCertificate(raw); err == nil {
				inter.AddCert(c)
			}
		}
		_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
		if err != nil {
			return fmt.Errorf("the peer's certificate is not from the cluster's CA: %w", err)
		}
		return nil
	}
	ts.internalServer = &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	}
	ts.internalClient = &tls.Config{
		Certificates: []tls.Certificate{cert},
		// The chain is verified by VerifyPeerCertificate; host names are
		// not (see above).
		InsecureSkipVerify:    true,
		VerifyPeerCertificate: verify,
		MinVersion:            tls.VersionTLS12,
	}
	return ts, nil
}

// gossipKey decodes --gossip-key (base64 of 16, 24 or 32 bytes).
func gossipKey(cfg Config) ([]byte, error) {
	if cfg.GossipKey == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(cfg.GossipKey)
	if err != nil {
		return nil, fmt.Errorf("--gossip-key: not base64: %w", err)
	}
	switch len(key) {
	case 16, 24, 32:
		return key, nil
	}
	return nil, fmt.Errorf("--gossip-key: %d bytes; want 16, 24 or 32 (e.g. head -c 32 /dev/urandom | base64)", len(key))
}
