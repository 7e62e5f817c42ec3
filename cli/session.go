package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/client"
)

// session is one command's connection to the cluster: a client of package
// client built from the connection flags, the context its calls run under
// (the command's, bounded by --timeout), and the answer of its latest
// call, which -o json prints as it came.
type session struct {
	*client.Client
	cmd    *cobra.Command
	ctx    context.Context
	cancel context.CancelFunc
	// timeout is --timeout (0: none), which bounds ctx unless untimed.
	timeout time.Duration
	answer  client.Answer
	p       printer
	// creds says that credentials were given (Basic or a certificate),
	// cert that a certificate was: they choose the hint of a refusal.
	creds, cert bool
}

// session opens cmd's connection. It connects to nothing yet.
func (a *app) session(cmd *cobra.Command) (*session, error) {
	cfg, err := a.conn.config()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg)
	if err != nil {
		return nil, Usage(err)
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	cancel := context.CancelFunc(func() {})
	if a.conn.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, a.conn.timeout)
	}
	cert := cfg.TLS != nil && len(cfg.TLS.Certificates) > 0
	s := &session{Client: c, cmd: cmd, cancel: cancel, timeout: a.conn.timeout, p: a.printer(cmd), creds: cfg.Username != "" || cert, cert: cert}
	s.ctx = client.WithAnswer(ctx, &s.answer)
	return s, nil
}

func (s *session) close() {
	s.cancel()
	_ = s.Close()
}

// raw prints the latest answer's body as it came (-o json).
func (s *session) raw() error { return s.p.raw(s.answer.Body) }

// done prints, after a call that changed something, the answer as it came
// with -o json, else its statusMessage (a management answer's), else
// fallback.
func (s *session) done(fallback string) error { return message(s.p, s.answer.Body, fallback) }

// explain adds to err what the person at the command line should know: a
// conflict's current value (printed to standard output, as the API
// answered it), a hint where credentials or a certificate are missing.
func (s *session) explain(err error) error {
	var e *client.Error
	switch {
	case errors.As(err, &e) && e.Current != nil:
		if perr := (printer{out: s.cmd.OutOrStdout()}).raw(e.Current); perr != nil {
			return errors.Join(err, perr)
		}
		e.Message = "the current value (or definition) is on standard output"
	case errors.As(err, &e) && e.Status == http.StatusUnauthorized && !s.creds:
		e.Message += " (no credentials were sent: give --user with --password-file, or KVNODE_USER and KVNODE_PASSWORD)"
	case errors.As(err, &e) && e.RetryAfter > 0:
		if e.Message == "" { // a HEAD's answer has no body to give a cause
			e.Message = http.StatusText(e.Status)
		}
		e.Message += fmt.Sprintf(" (retry after %v)", e.RetryAfter)
	case errors.Is(err, client.ErrUnauthorized) && !errors.As(err, &e):
		// Refused at the TLS handshake: nothing reached the API.
		hint := "give --cert and --key (or KVNODE_CERT and KVNODE_KEY) of a certificate its client CA signed"
		if s.cert {
			hint = "the member does not accept the certificate of --cert (another CA's, expired, or not for client use?)"
		}
		return &deniedError{err: err, hint: hint}
	}
	return err
}

// deniedError is a refusal at the TLS handshake, with a hint.
type deniedError struct {
	err  error
	hint string
}

func (e *deniedError) Error() string { return e.err.Error() + ": " + e.hint }
func (e *deniedError) Unwrap() error { return e.err }

// untimed lifts --timeout from the session's calls: a watch's or a
// backup's answer takes as long as it takes.
func (s *session) untimed() {
	s.cancel()
	ctx := s.cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	s.ctx = client.WithAnswer(ctx, &s.answer)
}

// bounded is the (untimed) session's context bounded by --timeout, for
// one call of a command that makes calls for as long as it takes.
func (s *session) bounded() (context.Context, context.CancelFunc) {
	if s.timeout <= 0 {
		return context.WithCancel(s.ctx)
	}
	return context.WithTimeout(s.ctx, s.timeout)
}
