package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/auth"
)

// hashPasswordCommand is `kvnode hash-password`.
func hashPasswordCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "hash-password",
		Short: "Read a password on standard input, print its bcrypt hash for a security file",
		Long: `Read one line, a password, on standard input and print its bcrypt hash,
for the "password" of a user in the file --security-file names. The password
comes on standard input, never as an argument: ps shows arguments.

  echo 'change-me' | kvnode hash-password`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return hashPassword(cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
}

// hashPassword is one line from in, its bcrypt hash to out.
func hashPassword(in io.Reader, out io.Writer) error {
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read the password: %w", err)
	}
	h, err := auth.HashPassword([]byte(line))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, h)
	return err
}
