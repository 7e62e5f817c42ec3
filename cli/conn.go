package cli

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvnode/kvnode/client"
)

// envPrefix starts the variables of the client flags, as it does the
// server's: --url is KVNODE_URL.
const envPrefix = "KVNODE_"

// connFlags are the flags every client command takes: where the cluster
// is, who the user is, how to trust the members, how to print. Each has a
// KVNODE_* variable, below the flag.
type connFlags struct {
	urls         []string
	user         string
	password     string
	passwordFile string
	cacert       string
	cert, key    string
	insecure     bool
	output       string
	timeout      time.Duration
}

// defaultURL is a node started with no flags on this machine.
const defaultURL = "http://localhost:8080"

// register declares the flags on fs (a command's persistent flags, so
// that its subcommands take them too).
func (f *connFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.urls, "url", []string{defaultURL}, "base URL of a member, repeated or comma-separated; the next is tried while one is unreachable (env KVNODE_URL)")
	fs.StringVarP(&f.user, "user", "u", "", "user name for HTTP Basic authentication (env KVNODE_USER)")
	fs.StringVar(&f.password, "password", "", "password (env KVNODE_PASSWORD); visible to other users in ps: prefer --password-file or the variable")
	fs.StringVar(&f.passwordFile, "password-file", "", "file whose first line is the password (env KVNODE_PASSWORD_FILE)")
	fs.StringVar(&f.cacert, "cacert", "", "PEM file of the CA that signed the members' certificates (env KVNODE_CACERT)")
	fs.StringVar(&f.cert, "cert", "", "PEM client certificate, with --key: its common name is the user for members with --client-cert-auth (env KVNODE_CERT)")
	fs.StringVar(&f.key, "key", "", "PEM private key of --cert (env KVNODE_KEY)")
	fs.BoolVar(&f.insecure, "insecure-skip-verify", false, "accept any server certificate (tests only) (env KVNODE_INSECURE_SKIP_VERIFY)")
	fs.StringVarP(&f.output, "output", "o", "table", "table, or json: the API's answer as it came, for scripts (env KVNODE_OUTPUT)")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "give up on the command's requests after this long (env KVNODE_TIMEOUT)")
}

// connFlagNames are the flags register declares.
func connFlagNames() []string {
	return []string{"url", "user", "password", "password-file", "cacert", "cert", "key", "insecure-skip-verify", "output", "timeout"}
}

// EnvNames are the variables of the client flags (KVNODE_URL, ...), which
// a node started in the same shell must not take for misspelt flags.
func EnvNames() []string {
	names := connFlagNames()
	for i, n := range names {
		names[i] = envName(n)
	}
	return names
}

func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnv sets every connection flag the command line left alone from
// its variable.
func applyEnv(cmd *cobra.Command, env map[string]string) error {
	fs := cmd.Flags()
	for _, name := range connFlagNames() {
		v, ok := env[envName(name)]
		if !ok || fs.Changed(name) {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return usagef("environment %s: %w", envName(name), err)
		}
	}
	return nil
}

// check refuses combinations that cannot mean what was asked.
func (f *connFlags) check() error {
	switch {
	case f.output != "table" && f.output != "json":
		return usagef("--output %q: want table or json", f.output)
	case f.password != "" && f.passwordFile != "":
		return usagef("give the password once: --password (KVNODE_PASSWORD) or --password-file (KVNODE_PASSWORD_FILE)")
	case f.user == "" && (f.password != "" || f.passwordFile != ""):
		return usagef("a password needs a user: give --user or KVNODE_USER")
	case (f.cert == "") != (f.key == ""):
		return usagef("--cert and --key go together")
	}
	return nil
}

// Bounds of the client's retries (package client's doc says which
// requests it sends again): how long a command waits for a member while
// none can serve it (an election takes a second or two; a command against
// a cluster that is down should not hang), and how long a member that
// could not be reached is passed over.
const (
	retryFor = 5 * time.Second
	skipFor  = 2 * time.Second
)

// config turns the (checked) flags into a client's configuration, reading
// the files they name.
func (f *connFlags) config() (client.Config, error) {
	if len(f.urls) == 0 {
		return client.Config{}, usagef("no URL of a member: give --url or KVNODE_URL")
	}
	tlsGiven := f.cacert != "" || f.cert != "" || f.insecure
	cfg := client.Config{Username: f.user, Password: f.password, RetryFor: retryFor, SkipFor: skipFor,
		// One command sends a request or a few: reading the routing
		// document first would cost more than the hop it saves.
		DisableSingleHop: true}
	for _, raw := range f.urls {
		base, err := client.ParseBase(raw, tlsGiven)
		if err != nil {
			return cfg, usagef("--url %q: want a base URL such as http://localhost:8080", raw)
		}
		cfg.Endpoints = append(cfg.Endpoints, base)
	}
	if f.passwordFile != "" {
		data, err := os.ReadFile(f.passwordFile)
		if err != nil {
			return cfg, usagef("--password-file: %w", err)
		}
		line, _, _ := strings.Cut(string(data), "\n")
		cfg.Password = strings.TrimSuffix(line, "\r")
	}
	if !tlsGiven {
		return cfg, nil
	}
	// InsecureSkipVerify only when asked for by its name.
	cfg.TLS = &tls.Config{InsecureSkipVerify: f.insecure}
	if f.cacert != "" {
		pem, err := os.ReadFile(f.cacert)
		if err != nil {
			return cfg, usagef("--cacert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return cfg, usagef("--cacert %s: no PEM certificate in it", f.cacert)
		}
		cfg.TLS.RootCAs = pool
	}
	if f.cert != "" {
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return cfg, usagef("--cert/--key: %w", err)
		}
		cfg.TLS.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// describeConn is the connection flags' part of a command's help.
func describeConn() string {
	return fmt.Sprintf(`
Connection: --url (default %s) or KVNODE_URL; several URLs
are tried in turn while a member cannot be reached, for up to %v, and so
is a request no member can serve yet (no leader) unless it is a write
that may have been applied: that is never sent twice. Credentials: --user
and --password-file (or --password), or KVNODE_USER and KVNODE_PASSWORD;
or, against members started with --client-cert-auth, a client certificate
whose common name is the user: --cert and --key (KVNODE_CERT, KVNODE_KEY).
Basic credentials win when both are given. TLS: --cacert,
--insecure-skip-verify. A flag wins over its variable.
`, defaultURL, retryFor)
}
