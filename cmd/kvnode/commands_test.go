package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kvnode/kvnode/cli"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node/nodetest"
)

// kvnode runs the command line as main does and returns what it printed
// on standard output and the error main would print.
func kvnode(t *testing.T, stdin string, env []string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := execute(ctx, args, env, strings.NewReader(stdin), &out, io.Discard)
	return out.String(), err
}

// TestHelpListsEverySubcommand: kvnode --help names every subcommand, the
// server's flags and the precedence of flags, environment and file.
func TestHelpListsEverySubcommand(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		out, err := kvnode(t, "", nil, args...)
		if err != nil {
			t.Fatalf("kvnode %s: %v", args[0], err)
		}
		for _, want := range []string{"serve", "healthcheck", "hash-password", "status", "region", "get", "put", "delete",
			"keys", "query", "function", "index", "completion", "version",
			"--http-addr", "--join", "--config", "precedence: flag > environment > config file > default"} {
			if !strings.Contains(out, want) {
				t.Errorf("kvnode %s does not mention %q:\n%s", args[0], want, out)
			}
		}
	}
	out, err := kvnode(t, "", nil, "serve", "--help")
	if err != nil || !strings.Contains(out, "--security-file") || !strings.Contains(out, "kvnode serve [flags]") {
		t.Errorf("kvnode serve --help: %v\n%s", err, out)
	}
	out, err = kvnode(t, "", nil, "put", "--help")
	if err != nil || !strings.Contains(out, "Exit codes:") || !strings.Contains(out, "--if-absent") || !strings.Contains(out, "KVNODE_URL") {
		t.Errorf("kvnode put --help: %v\n%s", err, out)
	}
}

// TestServeWithConfigFile: "serve" starts a node as kvnode alone does,
// with its configuration from a file below the environment and the flags.
func TestServeWithConfigFile(t *testing.T) {
	dir := t.TempDir()
	fileAddr, envAddr := nodetest.FreeAddr(t), nodetest.FreeAddr(t)
	config := filepath.Join(dir, "kvnode.yaml")
	if err := os.WriteFile(config, []byte(strings.Join([]string{
		"name: from-file",
		"data-dir: " + filepath.Join(dir, "data"),
		"http-addr: " + fileAddr, // the environment's wins
		"internal-addr: 127.0.0.1:0",
		"gossip-addr: 127.0.0.1:0",
		"regions: [orders:REPLICATE]",
		"log-level: debug", // the flag's wins
	}, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- execute(ctx, []string{"serve", "--config", config, "--log-level", "warn"},
			[]string{"KVNODE_HTTP_ADDR=" + envAddr, "KVNODE_URL=http://ignored"}, nil, io.Discard, io.Discard)
	}()
	waitfor.Cond(t, 15*time.Second, "the region from the config file to exist at the environment's address", func() bool {
		resp, err := http.Get("http://" + envAddr + "/kv/v1/orders")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if resp, err := http.Get("http://" + fileAddr + "/kv/v1/ping"); err == nil {
		resp.Body.Close()
		t.Errorf("the node also serves on the file's http-addr; the environment should have won")
	}
	// The client commands of the same binary reach it.
	out, err := kvnode(t, "", []string{"KVNODE_URL=http://" + envAddr}, "region", "list")
	if err != nil || out != "NAME    TYPE\norders  REPLICATE\n" {
		t.Errorf("kvnode region list: %v\n%s", err, out)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after cancel, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not return within 20s of cancel")
	}
}

func TestCommandLineRefusals(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(typo, []byte("htp-addr: :9000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--config", typo}, cli.ExitFailure, `unknown key "htp-addr"`},
		{[]string{"serve", "--config", typo}, cli.ExitFailure, `unknown key "htp-addr"`},
		// Go's flag syntax, one dash or two, as before cobra.
		{[]string{"-bootstrap-expect", "0"}, cli.ExitFailure, "bootstrap-expect"},
		{[]string{"--bootstrap-expect=0"}, cli.ExitFailure, "bootstrap-expect"},
		{[]string{"serve", "--no-such-flag"}, cli.ExitFailure, "no-such-flag"},
		{[]string{"stauts"}, cli.ExitBadInput, `did you mean "status"`},
		{[]string{"version", "extra"}, cli.ExitBadInput, "extra"},
		{[]string{"healthcheck", "--bogus"}, cli.ExitBadInput, "bogus"},
		{[]string{"keys", "orders", "--url", "http://" + nodetest.FreeAddr(t)}, cli.ExitUnavailable, "no member reachable"},
	} {
		_, err := kvnode(t, "", nil, tc.args...)
		if err == nil || cli.ExitCode(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kvnode %s: %v (exit code %d), want exit code %d and %q", strings.Join(tc.args, " "), err, cli.ExitCode(err), tc.code, tc.want)
		}
	}
}

// TestHealthcheckExitsOne: a probe that times out fails with exit code
// 1, the only failure code Docker's HEALTHCHECK defines.
func TestHealthcheckExitsOne(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = kvnode(t, "", nil, "healthcheck", "--url", "http://"+ln.Addr().String()+"/readyz", "--timeout", "200ms")
	if !errors.Is(err, context.DeadlineExceeded) || cli.ExitCode(err) != 1 {
		t.Errorf("healthcheck of a silent server: %v, exit code %d; want a timeout and 1", err, cli.ExitCode(err))
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, err := kvnode(t, "", nil, "completion", shell)
		if err != nil || len(out) < 1000 || !strings.Contains(out, "kvnode") {
			t.Errorf("kvnode completion %s: %v, %d bytes", shell, err, len(out))
		}
	}
	// What the scripts ask: the subcommands, then a command's flags.
	out, err := kvnode(t, "", nil, "__complete", "")
	if err != nil || !strings.Contains(out, "status\t") || !strings.Contains(out, "serve\t") {
		t.Errorf("completing a subcommand: %v\n%s", err, out)
	}
	out, err = kvnode(t, "", nil, "__complete", "query", "run", "x", "--bi")
	if err != nil || !strings.Contains(out, "--bind") {
		t.Errorf("completing a flag: %v\n%s", err, out)
	}
}

func TestHashPasswordAndVersion(t *testing.T) {
	out, err := kvnode(t, "s3cret\n", nil, "hash-password")
	if err != nil {
		t.Fatalf("hash-password: %v", err)
	}
	if err := bcrypt.CompareHashAndPassword([]byte(strings.TrimSpace(out)), []byte("s3cret")); err != nil {
		t.Errorf("hash-password printed %q, not a hash of the password: %v", out, err)
	}
	if _, err := kvnode(t, "\n", nil, "hash-password"); err == nil {
		t.Errorf("hash-password of an empty password succeeded")
	}
	if out, err := kvnode(t, "", nil, "version"); err != nil || out != "kvnode dev\n" {
		t.Errorf("version: %q, %v", out, err)
	}
}
