package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
)

func TestFailures(t *testing.T) {
	// A refused connection is not sent.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+addr+"/", nil)
	_, err = (&http.Client{Transport: New(Options{})}).Do(req)
	var ns *NotSentError
	if !errors.As(err, &ns) {
		t.Errorf("a refused connection: %v, want a *NotSentError", err)
	}
	if NotSent(nil) != nil {
		t.Error("NotSent(nil) is not nil")
	}
	alert := fmt.Errorf("read: %w", &net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")})
	if !CertRefused(alert) || CertRefused(&net.OpError{Op: "remote error", Err: errors.New("tls: protocol version not supported")}) {
		t.Error("CertRefused tells a certificate alert from another")
	}
	if !Untrusted(&NotSentError{&tls.CertificateVerificationError{Err: errors.New("x509: unknown authority")}}) || Untrusted(alert) {
		t.Error("Untrusted tells a verification failure from another")
	}
	if got := Distinct([]error{errors.New("a"), errors.New("b"), errors.New("a")}); got != "a; b" {
		t.Errorf("Distinct = %q, want a; b", got)
	}
}
