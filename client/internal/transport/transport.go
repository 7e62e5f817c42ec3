// Package transport is package client's HTTP transport and how its
// failures read: a request not sent (a connection or TLS handshake that
// failed first), which may go to another member whatever the failure; a
// member refusing the client's certificate; a member's certificate that
// does not verify. It is the standard library only.
package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Options are what the transport takes of the client's Config.
type Options struct {
	DialTimeout         time.Duration
	TLS                 *tls.Config
	MaxIdleConnsPerHost int
	DisableCompression  bool
}

// New is the HTTP transport of a client: connections that fail before
// anything is sent (refused, timed out, a refused TLS handshake) are
// marked NotSent so that the request can go to another member.
func New(o Options) *http.Transport {
	dialer := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}
	tlsConfig := o.TLS
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	tlsDialer := &tls.Dialer{NetDialer: dialer, Config: tlsConfig}
	return &http.Transport{
		// No proxy from the environment: members are addressed as given.
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			return conn, NotSent(err)
		},
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := tlsDialer.DialContext(ctx, network, addr)
			return conn, NotSent(err)
		},
		MaxIdleConns:        0, // no bound across members
		MaxIdleConnsPerHost: o.MaxIdleConnsPerHost,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   false, // the members speak HTTP/1.1
		DisableCompression:  o.DisableCompression,
	}
}

// NotSentError is a failure before the request left: it may go to
// another member whatever it is.
type NotSentError struct{ Err error }

func (e *NotSentError) Error() string { return e.Err.Error() }
func (e *NotSentError) Unwrap() error { return e.Err }

// NotSent is err as a *NotSentError (nil for nil).
func NotSent(err error) error {
	if err == nil {
		return nil
	}
	return &NotSentError{err}
}

// CertRefused reports whether err is a member's TLS alert about the
// client's certificate (none, or one its client CA did not sign): under
// TLS 1.3 the client hears of it only when it reads the answer, but the
// member never read the request.
func CertRefused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error" && strings.Contains(op.Err.Error(), "certificate")
}

// Untrusted reports whether err is a member's certificate that failed
// verification: trying again will not change that.
func Untrusted(err error) bool {
	var cve *tls.CertificateVerificationError
	return errors.As(err, &cve)
}

// Distinct is errs' messages, each once, in order, joined with "; ".
func Distinct(errs []error) string {
	var parts []string
	for _, err := range errs {
		if s := err.Error(); !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}
