package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/cli"
	"github.com/kvnode/kvnode/store/backup"
)

// restoreCommand is `kvnode restore`: an archive into a new member's data
// dir (package store/backup does the work).
func restoreCommand() *cobra.Command {
	var o backup.RestoreOptions
	var verifyOnly bool
	c := &cobra.Command{
		Use:   "restore --from FILE --data-dir DIR --name NAME --internal-addr HOST:PORT",
		Short: "Seed a new member's data dir from a backup (offline), or verify a backup",
		Long: `Seed DIR, a new member's absent or empty data dir, from the backup FILE
(kvnode backup), like etcdctl snapshot restore. The whole archive is verified
first (its SHA-256 over every byte, its structure): a damaged one is refused
before anything is written, and so is a data dir that is not empty.

The member NAME becomes the only voter of every group of the backup, each at
the backup's index; the partition table names it alone. Start it with the
same --name, --data-dir and an --internal-addr (or --advertise-internal)
that other members reach at HOST:PORT, then start fresh members that --join
it: the cluster re-grows, and partition groups go back to full replication
as the members join. Index definitions are rebuilt on start.

With --verify-only, only check FILE and print its manifest.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.From == "" {
				return cli.Usage(fmt.Errorf("restore: --from FILE is required"))
			}
			if verifyOnly {
				m, sum, err := backup.VerifyFile(o.From)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: verified, sha256 %s, format version %d, taken by %s at %s\n",
					o.From, sum, m.FormatVersion, m.Member, m.Created.Format("2006-01-02T15:04:05Z07:00"))
				fmt.Fprintf(cmd.OutOrStdout(), "%d groups, %d regions, %d entries, %d indexes, %d named queries, %d functions\n",
					len(m.Groups), len(m.Regions), m.Entries(), len(m.Indexes), len(m.NamedQueries), len(m.Functions))
				return nil
			}
			if o.DataDir == "" || o.Name == "" {
				return cli.Usage(fmt.Errorf("restore: --data-dir and --name are required"))
			}
			o.Logger = offlineLogger(cmd.ErrOrStderr())
			rep, err := backup.Restore(o)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "restored %s (sha256 %s) into %s as member %s\n", o.From, rep.Checksum, o.DataDir, rep.Member)
			printHeld(w, rep)
			fmt.Fprintf(w, "next: kvnode --name %s --data-dir %s --internal-addr %s ..., then start fresh members with --join\n", rep.Member, o.DataDir, o.InternalAddr)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&o.From, "from", "", "the backup file")
	f.StringVar(&o.DataDir, "data-dir", "", "the new member's data dir (absent or empty)")
	f.StringVar(&o.Name, "name", "", "the new member's --name")
	f.StringVar(&o.InternalAddr, "internal-addr", "", "host:port other members reach the new member's internal port at")
	f.BoolVar(&verifyOnly, "verify-only", false, "only verify the backup and print its manifest")
	return c
}

// recoverCommand is `kvnode recover`: a stopped survivor's data dir made
// into a one-member cluster when a majority is lost for good.
func recoverCommand() *cobra.Command {
	var o backup.RecoverOptions
	var yes bool
	c := &cobra.Command{
		Use:   "recover --data-dir DIR --yes",
		Short: "Make a stopped survivor the only member of every group it holds (majority lost for good)",
		Long: `When a majority of the members is lost for good, make the stopped member on
DIR the only voter of every Raft group it holds, so that it starts as a
one-member cluster; fresh members that --join it re-grow the cluster and
partition groups go back to full replication.

Risks: writes that only the lost members held are gone; entries of this
member's logs that were never committed are kept (nobody is left to say
which were). Partition groups this member did not host are lost: their
data is gone and they start over empty (recover lists them). Never run it
while the lost members could come back: two clusters would each accept
writes. It refuses a data dir a running kvnode holds. Take a copy of DIR
first. --yes says you have read this.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.DataDir == "" {
				return cli.Usage(fmt.Errorf("recover: --data-dir is required"))
			}
			if !yes {
				return cli.Usage(fmt.Errorf("recover: it rewrites the Raft configuration of every group and loses what only the lost members held; read kvnode recover --help, then add --yes"))
			}
			o.Logger = offlineLogger(cmd.ErrOrStderr())
			rep, err := backup.Recover(o)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "recovered %s: member %s is now the only voter of every group it holds\n", o.DataDir, rep.Member)
			printHeld(w, rep)
			if len(rep.Lost) > 0 {
				ids := make([]string, len(rep.Lost))
				for i, id := range rep.Lost {
					ids[i] = fmt.Sprint(id)
				}
				fmt.Fprintf(w, "LOST: partition groups %s were not on this member: their entries are gone; they start over empty\n", strings.Join(ids, ", "))
			}
			fmt.Fprintln(w, "next: start the member as before, then start fresh members with --join")
			return nil
		},
	}
	c.Flags().StringVar(&o.DataDir, "data-dir", "", "the stopped survivor's data dir")
	c.Flags().StringVar(&o.InternalAddr, "internal-addr", "", "the member's internal address (default: as the control group recorded it)")
	c.Flags().BoolVar(&yes, "yes", false, "confirm: you read the risks in --help")
	return c
}

func printHeld(w io.Writer, rep *backup.Report) {
	for _, g := range rep.Held {
		fmt.Fprintf(w, "  group %d: index %d, term %d, %d entries\n", g.ID, g.Index, g.Term, g.Entries)
	}
}

// offlineLogger logs an offline command's steps, as text, to w.
func offlineLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}
