package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// healthcheck is `kvnode healthcheck [--url URL] [--timeout D]`: it probes
// the local node's /readyz and returns an error unless it answers 200, so
// a FROM-scratch image needs no curl (compose healthchecks, Kubernetes exec
// probes). Without --url it derives the address from KVNODE_HTTP_ADDR and
// the scheme from KVNODE_TLS_CERT, the way the node itself reads them.
func healthcheck(ctx context.Context, args, env []string, out io.Writer) error {
	fs := flag.NewFlagSet("kvnode healthcheck", flag.ContinueOnError)
	fs.SetOutput(out)
	url := fs.String("url", "", "URL to probe (default: /readyz of the local node)")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" {
		*url = localProbeURL(env)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	// The probe checks this node, whatever certificate it serves.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck %s: %w", *url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck %s: %d %s", *url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	fmt.Fprintln(out, "ok:", *url)
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
