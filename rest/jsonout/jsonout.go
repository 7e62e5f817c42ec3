package jsonout

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/kvnode/kvnode/region"
)

// Marshal encodes a response document (never an entry value: those are
// written as stored), without HTML escaping and without the encoder's
// trailing newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// RegionValues builds {"<region>":[v1,v2,...]} by concatenation, so stored
// values go out byte for byte; a nil value (a missing key the client asked
// to ignore) is written as null.
func RegionValues(name string, values []json.RawMessage) ([]byte, error) {
	quoted, err := Marshal(name)
	if err != nil {
		return nil, err
	}
	size := len(quoted) + 4
	for _, v := range values {
		size += len(v) + 1
	}
	buf := make([]byte, 0, size)
	buf = append(buf, '{')
	buf = append(buf, quoted...)
	buf = append(buf, ':', '[')
	for i, v := range values {
		if i > 0 {
			buf = append(buf, ',')
		}
		if v == nil {
			buf = append(buf, "null"...)
		} else {
			buf = append(buf, v...)
		}
	}
	buf = append(buf, ']', '}')
	return buf, nil
}

// WriteValue writes an entry's value as stored (null for none, as
// RegionValues does).
func WriteValue(w *bufio.Writer, e region.Entry) error {
	if e.Value == nil {
		_, err := w.WriteString("null")
		return err
	}
	_, err := w.Write(e.Value)
	return err
}

// KeyWriter writes keys as JSON strings exactly as Marshal does (no HTML
// escaping), without an allocation for the common plain key. One is used
// by one goroutine at a time.
type KeyWriter struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// NewKeyWriter returns a KeyWriter.
func NewKeyWriter() *KeyWriter {
	k := &KeyWriter{}
	k.enc = json.NewEncoder(&k.buf)
	k.enc.SetEscapeHTML(false)
	return k
}

// Write writes e's key as a JSON string.
func (k *KeyWriter) Write(w *bufio.Writer, e region.Entry) error {
	if plainJSON(e.Key) {
		if err := w.WriteByte('"'); err != nil {
			return err
		}
		if _, err := w.WriteString(e.Key); err != nil {
			return err
		}
		return w.WriteByte('"')
	}
	k.buf.Reset()
	if err := k.enc.Encode(e.Key); err != nil {
		return fmt.Errorf("encode key: %w", err)
	}
	_, err := w.Write(bytes.TrimSuffix(k.buf.Bytes(), []byte("\n")))
	return err
}

// plainJSON reports whether s is its own JSON string body: printable ASCII
// without '"' or '\'. encoding/json writes such a string unchanged when HTML
// escaping is off.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b > 0x7e || b == '"' || b == '\\' {
			return false
		}
	}
	return true
}
