package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// printer writes a command's result: a table for people, or with -o json
// the API's answer as it came (a script's stable contract), one document
// per line.
type printer struct {
	out  io.Writer
	json bool
}

// raw writes an answer's body as it came, ending with a newline; an empty
// body writes nothing.
func (p printer) raw(body []byte) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(p.out, "%s\n", body)
	return err
}

// doc writes v as one line of JSON.
func (p printer) doc(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode the output: %w", err)
	}
	return p.raw(data)
}
