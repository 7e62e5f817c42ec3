package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestList(t *testing.T) {
	dec := json.NewDecoder(strings.NewReader(`{"keys":["a","b"]}`))
	if err := OpenList(dec, "keys"); err != nil {
		t.Fatal(err)
	}
	var n int
	for dec.More() {
		var k string
		if err := dec.Decode(&k); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := CloseList(dec); err != nil || n != 2 {
		t.Fatalf("CloseList = %v after %d keys", err, n)
	}
	if err := OpenList(json.NewDecoder(strings.NewReader(`{"other":[`)), "keys"); err == nil {
		t.Error("another listing's name was taken")
	}
	cut := json.NewDecoder(strings.NewReader(`{"keys":["a"`))
	_ = OpenList(cut, "keys")
	_ = cut.Decode(new(string))
	if err := CloseList(cut); err == nil {
		t.Error("a listing cut short was taken as whole")
	}
}

func TestCause(t *testing.T) {
	for body, want := range map[string]string{
		`{"cause":"no such region"}`: "no such region",
		`{"cause":"x","total":1}`:    "", // a stored value with a cause member
		`not json`:                   "",
		`{"statusCode":"OK"}`:        "",
	} {
		if got := Cause([]byte(body)); got != want {
			t.Errorf("Cause(%s) = %q, want %q", body, got, want)
		}
	}
}
