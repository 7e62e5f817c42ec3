package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvnode/kvnode/cli"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodeflags"
)

// serveCommand is the command that starts a node: the root (kvnode with
// no subcommand, as it always was) and "serve". nodeflags parses its
// command line itself, with Go's flag package exactly as before cobra
// came (-name and --name alike, KVNODE_* variables, --config), so cobra's
// flag parsing is off; the flags are declared on cobra's set only for the
// help and for cobra to find subcommands behind them.
func serveCommand(use string, env []string) *cobra.Command {
	c := &cobra.Command{
		Use:                use + " [flags]",
		Short:              "Start a member (the same as kvnode with no subcommand)",
		Args:               cobra.ArbitraryArgs,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.HasParent() && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
				return unknownCommand(cmd, args[0])
			}
			return serve(cmd, args, env)
		},
	}
	doc := node.Default()
	doc.Name = "" // its usage says "the host name", whichever host reads the help
	c.Flags().AddGoFlagSet(nodeflags.FlagSet(&doc, io.Discard))
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if strings.Contains(f.Usage, "default") {
			f.DefValue = "" // the usage says it better than the raw value
		}
	})
	return c
}

// serve starts a node with args and env, serves until the command's
// context ends (SIGTERM or SIGINT), then shuts down gracefully; SIGHUP
// reloads the TLS material and the security file (the node also reloads
// them when they change on disk).
func serve(cmd *cobra.Command, args, env []string) error {
	cfg, unknownEnv, err := nodeflags.Parse(args, env, io.Discard)
	if errors.Is(err, flag.ErrHelp) {
		return cmd.Help()
	}
	if err != nil {
		return err
	}
	logger, err := node.NewLogger(cmd.ErrOrStderr(), cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	// The client commands' variables (KVNODE_URL, ...) are not misspelt flags.
	clientEnv := cli.EnvNames()
	unknownEnv = slices.DeleteFunc(unknownEnv, func(k string) bool { return slices.Contains(clientEnv, k) })
	if len(unknownEnv) > 0 {
		logger.Warn("ignoring environment variables that match no flag", "vars", strings.Join(unknownEnv, ","))
	}
	cfg.Logger, cfg.Version = logger, version
	ctx := cmd.Context()
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
			_ = n.Reload() // it logs the outcome
		}
	}
}
