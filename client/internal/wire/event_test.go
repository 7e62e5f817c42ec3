package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// slowDecode is what encoding/json makes of data: what Decode must give.
func slowDecode(data []byte) (EventDoc, error) {
	var doc struct {
		Type, Region, Key string
		Value             json.RawMessage
		Cause, Token      string
	}
	err := json.Unmarshal(data, &doc)
	return EventDoc(doc), err
}

func checkDecode(t *testing.T, d *EventDecoder, data []byte) {
	t.Helper()
	got, err := d.Decode(data)
	want, wantErr := slowDecode(data)
	if (err != nil) != (wantErr != nil) || err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode(%q) = %+v, %v; encoding/json gives %+v, %v", data, got, err, want, wantErr)
	}
}

func TestDecodeEvent(t *testing.T) {
	var d EventDecoder
	for _, data := range []string{
		`{"type":"update","region":"r","key":"k1","value":{"a":[1,2]}}`,
		`{"type":"create","region":"r","key":"k2","value":"text"}`,
		`{"type":"destroy","region":"r2","key":"k2"}`,
		`{"type":"end","cause":"the region was destroyed"}`,
		`{"type":"error","cause":"behind","token":"0:17.3"}`,
		`{"type":"update","region":"r","key":"a\"b","value":1}`, // an escape in a string
		`{"type":"update","region":"r","key":"\u00e9","value":1}`,
		`{"type":"update","Region":"r","KEY":"k","value":1}`, // names in another case
		`{"type":"update","region":"r","key":null,"value":null}`,
		`{"type":"update","region":"r","key":5}`, // wrong type: an error
		`{"type":"update","region":"r","key":"k","value":}`,
		`{"other":[{"key":"x"}],"key":"k"}`,
		`[]`, `null`, ``, `{"key":"k"} {}`,
	} {
		checkDecode(t, &d, []byte(data))
	}
}

// A stream of one region's changes allocates the key per event, and
// nothing else.
func TestDecodeEventAllocs(t *testing.T) {
	var d EventDecoder
	data := []byte(`{"type":"update","region":"watched","key":"w-17","value":{"writer":"r1","seq":123456}}`)
	if _, err := d.Decode(data); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := d.Decode(data); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Errorf("Decode allocates %v times per event, want 1 (the key)", n)
	}
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(`{"type":"update","region":"r","key":"k1","value":{"a":[1,2]},"token":"0:1.1"}`))
	f.Add([]byte(`{"type":"end","cause":"c"}`))
	f.Add([]byte(`{"Key":"\u0041","value":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d EventDecoder
		checkDecode(t, &d, data)
		checkDecode(t, &d, data) // with the names interned
	})
}
