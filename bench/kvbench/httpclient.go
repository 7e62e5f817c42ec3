package kvbench

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// What the HTTP targets share: the TLS files (kvnode's target too, which
// otherwise reaches the cluster through package client), and for etcd's
// JSON gateway and the watch workload the transport and the credentials.

// ClientTransport is the HTTP transport of cfg's clients (its TLS files,
// no proxy, no compression), keeping up to conns idle connections per
// member.
func ClientTransport(cfg *Config, conns int) (*http.Transport, error) {
	tlsCfg, err := TLSConfig(cfg)
	if err != nil {
		return nil, err
	}
	perHost := max(conns, 2)
	return &http.Transport{
		Proxy:               nil, // a benchmark measures the cluster, not a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tlsCfg,
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConns:        perHost * (len(cfg.Endpoints) + 2),
		MaxIdleConnsPerHost: perHost,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}, nil
}

// Authorization is the Authorization header of cfg's credentials (HTTP
// Basic), or "" without a user.
func (c *Config) Authorization() string {
	if c.User == "" {
		return ""
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.User+":"+c.Password))
}

// TLSConfig is the client's TLS configuration from the files cfg names, or
// nil when it names none (plain http, or https with the system's roots).
func TLSConfig(cfg *Config) (*tls.Config, error) {
	if cfg.CACert == "" && cfg.Cert == "" && !cfg.Insecure {
		return nil, nil
	}
	// InsecureSkipVerify only when asked for by its name.
	tc := &tls.Config{InsecureSkipVerify: cfg.Insecure, MinVersion: tls.VersionTLS12}
	if cfg.CACert != "" {
		pem, err := os.ReadFile(cfg.CACert)
		if err != nil {
			return nil, fmt.Errorf("CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA certificate %s: no PEM certificate in it", cfg.CACert)
		}
		tc.RootCAs = pool
	}
	if cfg.Cert != "" {
		pair, err := tls.LoadX509KeyPair(cfg.Cert, cfg.Key)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}
