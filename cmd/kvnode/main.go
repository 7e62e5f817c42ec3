// Command kvnode runs one member of a kvnode cluster. See the package doc.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodeflags"
)

// version is stamped at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		// The first signal starts a graceful shutdown; restoring the default
		// handling lets a second one end the process at once.
		<-ctx.Done()
		stop()
	}()
	if err := run(ctx, os.Args[1:], os.Environ()); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "kvnode:", err)
		os.Exit(1)
	}
}

// run starts a node with args and env (KEY=VALUE), serves until ctx ends
// (SIGTERM or SIGINT), then shuts down gracefully.
func run(ctx context.Context, args, env []string) error {
	return runWithOutput(ctx, args, env, os.Stderr)
}

func runWithOutput(ctx context.Context, args, env []string, out io.Writer) error {
	if len(args) > 0 && args[0] == "version" {
		fmt.Fprintln(out, "kvnode", version)
		return nil
	}
	if len(args) > 0 && args[0] == "healthcheck" {
		return healthcheck(ctx, args[1:], env, out)
	}
	if len(args) > 0 && args[0] == "hash-password" {
		// The password comes on stdin, never in argv (ps shows argv).
		return hashPassword(os.Stdin, os.Stdout)
	}
	cfg, unknownEnv, err := nodeflags.Parse(args, env, out)
	if err != nil {
		return err
	}
	logger, err := node.NewLogger(out, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	if len(unknownEnv) > 0 {
		logger.Warn("ignoring environment variables that match no flag", "vars", strings.Join(unknownEnv, ","))
	}
	cfg.Logger, cfg.Version = logger, version
	n, err := node.Start(ctx, cfg)
	if err != nil {
		return err
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return n.Shutdown()
		case err := <-n.Err():
			return errors.Join(err, n.Close())
		case <-hup:
			_ = n.ReloadSecurity() // it logs the outcome
		}
	}
}
