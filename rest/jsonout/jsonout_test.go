package jsonout

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// TestKeyWriterMatchesMarshal: every key, plain or not, is written exactly
// as Marshal (the whole-answer path) writes it.
func TestKeyWriterMatchesMarshal(t *testing.T) {
	k := NewKeyWriter()
	for _, key := range []string{"", "a", "plain-key_1", `q"uote`, `back\slash`, "<html>&", "tab\there", "é", "日本", "\x00", "\u2028", "~ !"} {
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		if err := k.Write(w, region.Entry{Key: key}); err != nil {
			t.Fatal(err)
		}
		_ = w.Flush()
		want, err := Marshal(key)
		if err != nil {
			t.Fatal(err)
		}
		if buf.String() != string(want) {
			t.Errorf("key %q: wrote %s, Marshal gives %s", key, buf.String(), want)
		}
	}
}

// TestRegionValuesKeepsBytes: values go out as stored, a nil one as null,
// and the document is valid JSON.
func TestRegionValuesKeepsBytes(t *testing.T) {
	got, err := RegionValues("or<ders", []json.RawMessage{json.RawMessage(`{"total":10.0}`), nil, json.RawMessage(`1e2`)})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"or<ders":[{"total":10.0},null,1e2]}`
	if string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if !json.Valid(got) {
		t.Fatal("not valid JSON")
	}
}

func TestWriteValue(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	_ = WriteValue(w, region.Entry{Key: "a", Value: []byte(`10.0`)})
	_ = w.WriteByte(',')
	_ = WriteValue(w, region.Entry{Key: "b"})
	_ = w.Flush()
	if buf.String() != "10.0,null" {
		t.Fatalf("got %q", buf.String())
	}
}
