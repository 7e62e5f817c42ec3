package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
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
scheme from KVNODE_TLS_CERT, as the node reads them; with
KVNODE_CLIENT_CERT_AUTH the probe goes to KVNODE_METRICS_ADDR's plain
listener when it is set, else presents the node's own certificate and key
(KVNODE_TLS_CERT, KVNODE_TLS_KEY). Exit code 0 when ready, 1 otherwise.`,
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
	// The probe checks this node, whatever certificate it serves.
	tlsCfg := &tls.Config{InsecureSkipVerify: true}
	if url == "" {
		target := localProbe(env)
		url = target.url
		if target.cert != "" {
			pair, err := tls.LoadX509KeyPair(target.cert, target.key)
			if err != nil {
				return fmt.Errorf("healthcheck: the node's certificate, for --client-cert-auth: %w", err)
			}
			tlsCfg.Certificates = []tls.Certificate{pair}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
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

// probeTarget is what the healthcheck probes, and the certificate and
// key it presents there (none when empty).
type probeTarget struct{ url, cert, key string }

// localProbe is the node's /readyz as its environment configures it.
// Under --client-cert-auth the REST port refuses a probe without a client
// certificate: the probe then goes to --metrics-addr's plain listener when
// the node has one, else it presents the node's own certificate, which
// the client CA accepts when it is --tls-ca (the default) and the
// certificate is for client use too.
func localProbe(env []string) probeTarget {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	clientCerts, _ := strconv.ParseBool(vars["KVNODE_CLIENT_CERT_AUTH"])
	if clientCerts && vars["KVNODE_METRICS_ADDR"] != "" {
		return probeTarget{url: "http://" + localAddr(vars["KVNODE_METRICS_ADDR"]) + "/readyz"}
	}
	scheme := "http"
	if vars["KVNODE_TLS_CERT"] != "" {
		scheme = "https"
	}
	addr := vars["KVNODE_HTTP_ADDR"]
	if addr == "" {
		addr = ":8080"
	}
	target := probeTarget{url: scheme + "://" + localAddr(addr) + "/readyz"}
	if clientCerts {
		target.cert, target.key = vars["KVNODE_TLS_CERT"], vars["KVNODE_TLS_KEY"]
	}
	return target
}

// localAddr is where this machine reaches a listener on addr: its host,
// or loopback for an unspecified one (port 8080 when addr has none).
func localAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		port = "8080"
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// unhealthy is a failed probe: exit code 1 whatever the cause, because
// Docker's HEALTHCHECK reads 1 as unhealthy and reserves the others.
type unhealthy struct{ err error }

func (u unhealthy) Error() string { return u.err.Error() }
func (u unhealthy) Unwrap() error { return u.err }
func (unhealthy) ExitCode() int   { return 1 }
