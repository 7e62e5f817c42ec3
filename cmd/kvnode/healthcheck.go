package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// healthcheckCommand is `kvnode healthcheck [--url URL] [--timeout D]`.
func healthcheckCommand(env []string) *cobra.Command {
	var url string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "healthcheck",
		Short: "Probe the local node's readiness (for container healthchecks)",
		Long: `Probe the local node's /readyz and fail unless it answers 200, so that a
FROM-scratch image needs no curl (compose healthchecks, Kubernetes exec
probes). Without --url the address comes from KVNODE_HTTP_ADDR and the
scheme from KVNODE_TLS_CERT, as the node reads them. Exit code 0 when
ready, 1 otherwise.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := healthcheck(cmd.Context(), url, timeout, env, cmd.OutOrStdout()); err != nil {
				return unhealthy{err}
			}
			return nil
		},
	}
	c.Flags().StringVar(&url, "url", "", "URL to probe (default: /readyz of the local node)")
	c.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "give up after this long")
	return c
}

// healthcheck probes url (the local node's /readyz when empty) and returns
// an error unless it answers 200.
func healthcheck(ctx context.Context, url string, timeout time.Duration, env []string, out io.Writer) error {
	if url == "" {
		url = localProbeURL(env)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	// The probe checks this node, whatever certificate it serves.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	fmt.Fprintln(out, "ok:", url)
	return nil
}

// localProbeURL is the node's /readyz as its environment configures it.
func localProbeURL(env []string) string {
	addr, scheme := ":8080", "http"
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "KVNODE_HTTP_ADDR":
			addr = v
		case "KVNODE_TLS_CERT":
			if v != "" {
				scheme = "https"
			}
		}
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		port = "8080"
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/readyz"
}

// unhealthy is a failed probe: exit code 1 whatever the cause, because
// Docker's HEALTHCHECK reads 1 as unhealthy and reserves the others.
type unhealthy struct{ err error }

func (u unhealthy) Error() string { return u.err.Error() }
func (u unhealthy) Unwrap() error { return u.err }
func (unhealthy) ExitCode() int   { return 1 }
