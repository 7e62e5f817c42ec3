// Command kvnode runs one member of a kvnode cluster, and talks to a
// running cluster over its REST API. See the package doc.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/cli"
)

// version is stamped at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

// defaultGOGC is the garbage collector's target when GOGC is not set. A
// member's heap is mostly its regions, which live long: Go's default of
// 100 lets the heap grow to twice them before collecting. With a million
// 200-byte entries, a member held 2.7-2.9x the raw data resident after a
// bulk load at 100 and 2.5-2.7x at 75 (Prometheus's default too), for a
// bulk load 10% slower (docs/performance.md). GOGC in the environment
// wins, and GOMEMLIMIT bounds the heap where memory is tight.
const defaultGOGC = 75

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGOGC)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		// The first signal starts a graceful shutdown; restoring the default
		// handling lets a second one end the process at once.
		<-ctx.Done()
		stop()
	}()
	if err := execute(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "kvnode:", err)
		os.Exit(cli.ExitCode(err))
	}
}

// runWithOutput runs the command line with args and env (KEY=VALUE),
// writing everything to out: a node serves until ctx ends (SIGTERM or
// SIGINT), then shuts down gracefully.
func runWithOutput(ctx context.Context, args, env []string, out io.Writer) error {
	return execute(ctx, args, env, os.Stdin, out, out)
}

// execute runs the command line with the process's streams.
func execute(ctx context.Context, args, env []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if args == nil {
		args = []string{} // cobra reads os.Args for nil
	}
	root := newRoot(env)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}

// newRoot is the command tree of one invocation. The root itself starts a
// node, as kvnode always did, and so does "serve"; the client commands
// come from package cli.
func newRoot(env []string) *cobra.Command {
	root := serveCommand("kvnode", env)
	root.Short = "A clustered, Raft-replicated key-value node serving Apache Geode's developer REST API"
	root.Long = `kvnode runs one member of a kvnode cluster, or talks to a running cluster.

With no subcommand (or with "serve") it starts a member, with the flags
below. Every flag can also be set by its variable KVNODE_<FLAG>
(--http-addr is KVNODE_HTTP_ADDR) and in the YAML file --config names
(http-addr: :9000); precedence: flag > environment > config file > default.

The client subcommands reach a cluster over its REST API only: --url (or
KVNODE_URL, default http://localhost:8080), with credentials and TLS flags;
"kvnode <command> --help" shows each one's flags and exit codes.`
	root.SilenceErrors, root.SilenceUsage = true, true
	root.SuggestionsMinimumDistance = 2
	root.AddGroup(&cobra.Group{ID: "server", Title: "Run a member:"})
	for _, c := range []*cobra.Command{serveCommand("serve", env), healthcheckCommand(env), hashPasswordCommand(), restoreCommand(), recoverCommand()} {
		c.GroupID = "server"
		root.AddCommand(c)
	}
	root.AddCommand(&cobra.Command{
		Use: "version", Short: "Print the version", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "kvnode", version)
			return err
		},
	})
	cli.Attach(root, env)
	return root
}

// unknownCommand is a command line whose first word is no command of kvnode.
func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath())
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return cli.Usage(errors.New(msg + "; see kvnode --help"))
}

// noArgs refuses arguments as a usage error (exit code 2).
func noArgs(cmd *cobra.Command, args []string) error {
	return cli.Usage(cobra.NoArgs(cmd, args))
}
