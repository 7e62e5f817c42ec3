package cluster

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/memberlist"
)

func TestMetaRoundTrip(t *testing.T) {
	full := Meta{
		RESTURL:         "http://10.0.0.5:8080",
		InternalAddr:    "10.0.0.5:7070",
		Groups:          []string{"east", "ssd"},
		BootstrapExpect: 3,
		Version:         "1.2.3",
		Formats:         3,
	}
	tests := map[string]wireMeta{
		"empty":                   {},
		"full":                    {Meta: full, boot: 0xfeedface_cafebeef},
		"leaving":                 {Meta: full, boot: 1, leaving: true},
		"unicode and empty group": {Meta: Meta{RESTURL: "https://nœud.example:8443", Groups: []string{"", "zürich"}, BootstrapExpect: 300}},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			b, err := encodeMeta(want)
			if err != nil {
				t.Fatalf("encodeMeta: %v", err)
			}
			got, err := decodeMeta(b)
			if err != nil {
				t.Fatalf("decodeMeta: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip: got %+v, want %+v", got, want)
			}
		})
	}
}

// TestMetaIsCompact keeps a typical node's metadata far below the 512-byte
// limit, leaving room for long host names and many groups.
func TestMetaIsCompact(t *testing.T) {
	b, err := encodeMeta(wireMeta{Meta: Meta{
		RESTURL:         "http://kvnode-2.kvnode.default.svc.cluster.local:8080",
		InternalAddr:    "kvnode-2.kvnode.default.svc.cluster.local:7070",
		Groups:          []string{"zone-a", "ssd"},
		BootstrapExpect: 3,
		Version:         "v1.0.0",
	}})
	if err != nil {
		t.Fatalf("encodeMeta: %v", err)
	}
	if len(b) > 160 {
		t.Errorf("encoded size: got %d bytes, want at most 160", len(b))
	}
}

func TestMetaSizeLimit(t *testing.T) {
	base, err := encodeMeta(wireMeta{})
	if err != nil {
		t.Fatal(err)
	}
	// A Version of n bytes (n < 128) costs n bytes over the empty encoding;
	// longer strings need a second length byte.
	fill := memberlist.MetaMaxSize - len(base) - 1
	if _, err := encodeMeta(wireMeta{Meta: Meta{Version: strings.Repeat("v", fill)}, leaving: true}); err != nil {
		t.Errorf("metadata of exactly %d bytes: got error %v, want accepted", memberlist.MetaMaxSize, err)
	}
	if _, err := encodeMeta(wireMeta{Meta: Meta{Version: strings.Repeat("v", fill+1)}}); err == nil {
		t.Errorf("metadata of %d bytes: got accepted, want error", memberlist.MetaMaxSize+1)
	}
	if _, err := encodeMeta(wireMeta{Meta: Meta{BootstrapExpect: -1}}); err == nil {
		t.Error("negative bootstrap-expect: got accepted, want error")
	}
}

func TestDecodeMetaRejectsBadInput(t *testing.T) {
	good, err := encodeMeta(wireMeta{Meta: Meta{RESTURL: "http://a:1", InternalAddr: "a:2", Groups: []string{"g"}, BootstrapExpect: 1, Version: "v"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string][]byte{
		"empty":          nil,
		"unknown format": append([]byte{metaFormat + 1}, good[1:]...),
		"huge length":    {metaFormat, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"varint overflow": {metaFormat, 0, 0, 0,
			0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"too many groups": {metaFormat, 0, 0, 0, 0, 100, 0, 0},
	}
	// Every strict prefix of a valid encoding is truncated, down to the
	// fields of the first release (Formats came later: an encoding that
	// ends before it is an older member's).
	for i := range len(good) - 2 {
		tests[fmt.Sprintf("truncated to %d bytes", i)] = good[:i]
	}
	for name, b := range tests {
		t.Run(name, func(t *testing.T) {
			if m, err := decodeMeta(b); err == nil {
				t.Errorf("decodeMeta(%x): got %+v, want error", b, m)
			}
		})
	}
	if m, err := decodeMeta(good[:len(good)-1]); err != nil || m.Formats != 0 {
		t.Errorf("an older member's encoding (no Formats): got %+v, %v; want Formats 0", m, err)
	}
	if _, err := decodeMeta(good[:len(good)-2]); !errors.Is(err, errTruncated) {
		t.Errorf("truncated input: got error %v, want one wrapping %v", err, errTruncated)
	}
}

// TestDecodeMetaIgnoresAppendedFields pins the compatibility rule: a later
// release may append fields under the same format byte.
func TestDecodeMetaIgnoresAppendedFields(t *testing.T) {
	want := wireMeta{Meta: Meta{RESTURL: "http://a:1", Groups: []string{"g"}}, leaving: true}
	b, err := encodeMeta(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeMeta(append(b, 7, 'f', 'u', 't', 'u', 'r', 'e', '!'))
	if err != nil {
		t.Fatalf("decodeMeta with appended field: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// FuzzDecodeMeta: bytes from the network never panic the decoder, and what
// it accepts re-encodes to something that decodes the same.
func FuzzDecodeMeta(f *testing.F) {
	for _, m := range []wireMeta{{}, {Meta: Meta{RESTURL: "http://a:1", InternalAddr: "a:2", Groups: []string{"x", "y"}, BootstrapExpect: 5, Version: "v"}, leaving: true}} {
		b, err := encodeMeta(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{metaFormat, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMeta(b)
		if err != nil {
			return
		}
		again, err := encodeMeta(m)
		if err != nil {
			// Decoded from at most what memberlist delivers, so it fits.
			if len(b) <= memberlist.MetaMaxSize {
				t.Fatalf("re-encode %+v: %v", m, err)
			}
			return
		}
		m2, err := decodeMeta(again)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-decode: got %+v, %v; want %+v", m2, err, m)
		}
	})
}
