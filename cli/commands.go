package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// app is what the client commands of one invocation share: the process's
// environment and the connection flags.
type app struct {
	env  map[string]string
	conn connFlags
}

// Attach adds the client subcommands of kvnode to root, under their own
// heading of its help, and makes root's flag errors usage errors (exit
// code 2). The commands are built afresh for one invocation: env is the
// process's environment (KEY=VALUE), read for the KVNODE_* variables of
// the connection flags.
func Attach(root *cobra.Command, env []string) {
	const groupID = "client"
	root.AddGroup(&cobra.Group{ID: groupID, Title: "Talk to a running cluster (over its REST API):"})
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return Usage(err) })
	a := &app{env: map[string]string{}}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			a.env[k] = v
		}
	}
	for _, c := range []*cobra.Command{
		newStatusCmd(a), newRegionCmd(a), newGetCmd(a), newPutCmd(a), newDeleteCmd(a),
		newKeysCmd(a), newQueryCmd(a), newFunctionCmd(a), newIndexCmd(a), newBackupCmd(a), newMemberCmd(a), newWatchCmd(a),
		newRebalanceCmd(a), newPartitionsCmd(a),
	} {
		c.GroupID = groupID
		a.conn.register(c.PersistentFlags())
		c.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return a.resolve(cmd) }
		c.Long = strings.TrimSpace(c.Long) + "\n" + describeConn()
		c.SetUsageTemplate(c.UsageTemplate() + exitCodesHelp)
		completeRegions(a, c)
		root.AddCommand(c)
	}
}

// completeRegions gives every command of c's tree whose first argument is
// a REGION (as its Use says) the completion of region names.
func completeRegions(a *app, c *cobra.Command) {
	if f := strings.Fields(c.Use); len(f) > 1 && f[1] == "REGION" {
		c.ValidArgsFunction = a.completeRegion
	}
	for _, sub := range c.Commands() {
		completeRegions(a, sub)
	}
}

// resolve completes the connection flags cmd's command line left alone
// from their variables and checks them, before the command runs.
func (a *app) resolve(cmd *cobra.Command) error {
	if err := applyEnv(cmd, a.env); err != nil {
		return err
	}
	return a.conn.check()
}

// printer writes to cmd's output in the chosen format.
func (a *app) printer(cmd *cobra.Command) printer {
	return printer{out: cmd.OutOrStdout(), json: a.conn.output == "json"}
}

// completeRegion completes a command's first argument, a region, with the
// names the cluster has (shell completion asks the cluster with the
// connection flags already typed; when it cannot be reached, nothing).
func (a *app) completeRegion(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	// Completion runs no hooks: resolve the flags here.
	if a.resolve(cmd) != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	a.conn.timeout = completionTimeout
	s, err := a.session(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	defer s.close()
	regions, err := s.Regions(s.ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	names := make([]string, len(regions))
	for i, r := range regions {
		names[i] = r.Name
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completionTimeout bounds a completion's request: a shell waits for it.
const completionTimeout = 2 * time.Second

// command builds a command: args checks its arguments (a wrong count is
// the command line's fault, exit code 2) and fn runs it with the
// command's session. A conflict that came with the current value (an
// existing entry, a CAS mismatch, an existing query or index) prints that
// value, as the API answered it, before the error.
func (a *app) command(use, short, long string, args cobra.PositionalArgs, fn func(s *session, args []string) error) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Long: long,
		Args: func(cmd *cobra.Command, as []string) error {
			if err := args(cmd, as); err != nil {
				return usagef("%s: %w", cmd.UseLine(), err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, as []string) error {
			s, err := a.session(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			return s.explain(fn(s, as))
		},
	}
}

// group is a command that only holds subcommands: run alone or with an
// unknown subcommand, it is a usage error that lists them.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use: use, Short: short, Long: short + ".",
		Args:                       cobra.ArbitraryArgs,
		SuggestionsMinimumDistance: 2,
		RunE: func(cmd *cobra.Command, args []string) error {
			names := make([]string, len(subs))
			for i, s := range subs {
				names[i] = s.Name()
			}
			if len(args) > 0 {
				hint := ""
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					hint = fmt.Sprintf(" (did you mean %q?)", s[0])
				}
				return usagef("unknown command %q for %q%s: want %s", args[0], cmd.CommandPath(), hint, strings.Join(names, ", "))
			}
			return usagef("%s needs a subcommand: %s", cmd.CommandPath(), strings.Join(names, ", "))
		},
	}
	c.AddCommand(subs...)
	return c
}

// splitKeys reads key arguments: each may itself be a comma list (keys
// never contain commas; the API separates them with commas).
func splitKeys(args []string) ([]string, error) {
	var keys []string
	for _, arg := range args {
		for _, k := range strings.Split(arg, ",") {
			if k == "" {
				return nil, usagef("empty key in %q", arg)
			}
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// readValue reads a value: --file's content, standard input for "-", or
// the argument itself.
func readValue(cmd *cobra.Command, arg, file string) ([]byte, error) {
	switch {
	case file != "" && arg != "":
		return nil, usagef("give the value once: as an argument or with --file")
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, usagef("read the value: %w", err)
		}
		return data, nil
	case arg == "-":
		data, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return nil, fmt.Errorf("read the value from standard input: %w", err)
		}
		return data, nil
	case arg == "":
		return nil, usagef("no value: give it as an argument, with --file FILE, or - for standard input")
	}
	return []byte(arg), nil
}

// message prints a management answer's statusMessage in table mode, the
// answer itself with -o json.
func message(p printer, body []byte, fallback string) error {
	if p.json {
		return p.raw(body)
	}
	var doc struct {
		StatusMessage string `json:"statusMessage"`
	}
	if json.Unmarshal(body, &doc) == nil && doc.StatusMessage != "" {
		fallback = doc.StatusMessage
	}
	_, err := fmt.Fprintln(p.out, fallback)
	return err
}
