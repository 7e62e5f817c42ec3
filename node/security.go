package node

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/internal/reload"
)

// tlsSetup is the TLS of a node: the REST port's server side, and mutual
// TLS on the internal port (both sides). The configurations read the
// material in force at every handshake (package reload).
type tlsSetup struct {
	rest           *tls.Config // nil: plain HTTP
	internalServer *tls.Config // nil: plain TCP
	internalClient *tls.Config
}

// loadFiles loads the files a node keeps in force while it serves
// (--tls-cert and --tls-key, --tls-ca, --client-ca, --security-file) into
// n.tls and n.auth, and returns the watcher that reloads them when they
// change on disk and on SIGHUP (Node.Reload). A file that does not load
// fails the start; later, it leaves the previous one in force.
//
// The certificate serves the REST port; with a CA it also authenticates
// this node on the internal port, where every peer must present a
// certificate that CA signed and, with --peer-names, that names it so.
// Peers are checked by chain and names, not by the address dialled:
// members dial each other at addresses gossip advertises (often IPs that
// change as pods move). With --client-cert-auth the REST port requires a
// client certificate of --client-ca (--tls-ca without it) too.
func (n *Node) loadFiles(cfg Config) (*reload.Watcher, error) {
	w := reload.NewWatcher(reload.Options{Logger: n.logger.With("component", "reload"), Observer: n.metrics})
	if cfg.TLSCert == "" && cfg.TLSKey == "" {
		if cfg.TLSCA != "" {
			return nil, errors.New("--tls-ca needs --tls-cert and --tls-key: the node's own certificate for mutual TLS")
		}
	} else {
		if cfg.TLSCert == "" || cfg.TLSKey == "" {
			return nil, errors.New("--tls-cert and --tls-key go together")
		}
		peers, err := reload.ParsePeerNames(cfg.PeerNames)
		if err != nil {
			return nil, err
		}
		material := reload.NewTLS(peers, n.logger.With("component", "tls"), n.metrics)
		if err := w.Add(reload.File{Name: "tls", Title: "TLS certificate and key", Paths: []string{cfg.TLSCert, cfg.TLSKey}, Load: material.LoadCertificate}); err != nil {
			return nil, fmt.Errorf("load --tls-cert/--tls-key: %w", err)
		}
		n.tls.rest = material.ServerConfig()
		if cfg.TLSCA != "" {
			if err := w.Add(reload.File{Name: "ca", Title: "CA", Paths: []string{cfg.TLSCA}, Load: material.LoadCA}); err != nil {
				return nil, fmt.Errorf("load --tls-ca: %w", err)
			}
			n.tls.internalServer = material.InternalServerConfig()
			n.tls.internalClient = material.InternalClientConfig()
		}
		if cfg.ClientCA != "" {
			if err := w.Add(reload.File{Name: "client-ca", Title: "client CA", Paths: []string{cfg.ClientCA}, Load: material.LoadClientCA}); err != nil {
				return nil, fmt.Errorf("load --client-ca: %w", err)
			}
		}
		if cfg.ClientCertAuth {
			n.tls.rest = material.ClientAuthConfig()
		}
	}
	if cfg.SecurityFile != "" {
		err := w.Add(reload.File{Name: "security", Title: "security file", Paths: []string{cfg.SecurityFile}, Load: func([][]byte) ([]slog.Attr, error) {
			if n.auth == nil {
				a, err := auth.Load(cfg.SecurityFile)
				n.auth = a
				return nil, err
			}
			return nil, n.auth.Reload()
		}})
		if err != nil {
			return nil, fmt.Errorf("--security-file: %w", err)
		}
	}
	return w, nil
}

// Reload re-reads the TLS certificate and key, the CAs and the security
// file, as cmd/kvnode does on SIGHUP; each is also reloaded when it
// changes on disk. A file that does not load leaves the one before it in
// force. Every outcome is logged, and the refusals are returned.
func (n *Node) Reload() error {
	n.logger.Info("reloading files on request")
	return n.files.Reload(true)
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
