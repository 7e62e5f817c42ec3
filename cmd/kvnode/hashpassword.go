package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/kvnode/kvnode/auth"
)

// hashPassword is `kvnode hash-password`: one line from in, its bcrypt
// hash to out.
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
