package archive

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// sample builds an archive of two groups and returns it with its parts.
func sample(t *testing.T) ([]byte, *Manifest, map[uint64][]byte) {
	t.Helper()
	snaps := map[uint64][]byte{0: []byte("control group's snapshot"), 1: []byte("partition group 1"), 2: {}}
	m := &Manifest{
		KvnodeVersion: "test", Created: time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC),
		Member: "a", Members: []string{"a", "b", "c"}, Partitions: 2, ReplicationFactor: 3,
		Groups: []Group{
			{ID: 0, Index: 12, Term: 2, Entries: 3, Bytes: int64(len(snaps[0]))},
			{ID: 1, Index: 7, Term: 3, Entries: 4, Bytes: int64(len(snaps[1]))},
			{ID: 2, Index: 1, Term: 1, Bytes: 0},
		},
		Regions:      []Region{{Name: "r", Kind: "REPLICATE", Entries: 3}, {Name: "p", Kind: "PARTITION", Entries: 4}},
		Indexes:      []Index{{Region: "p", Name: "byN"}},
		NamedQueries: []string{"q"},
		Functions:    []string{"f"},
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range m.Groups {
		if err := w.Group(g.ID, bytes.NewReader(snaps[g.ID])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), m, snaps
}

func TestRoundTrip(t *testing.T) {
	data, m, snaps := sample(t)
	size, err := Size(m)
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(len(data)) {
		t.Errorf("Size = %d, the archive has %d bytes", size, len(data))
	}
	got := map[uint64][]byte{}
	back, sum, err := Read(bytes.NewReader(data), func(_ *Manifest, g Group, r io.Reader) error {
		b, err := io.ReadAll(r)
		got[g.ID] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum) != 64 {
		t.Errorf("checksum %q, want 64 hex digits", sum)
	}
	if back.Member != "a" || back.Partitions != 2 || len(back.Groups) != 3 || back.Groups[1].Index != 7 || back.Entries() != 7 ||
		back.Regions[1].Name != "p" || back.Indexes[0].Name != "byN" || back.NamedQueries[0] != "q" || back.Functions[0] != "f" ||
		!back.Created.Equal(m.Created) || back.FormatVersion != Version {
		t.Errorf("manifest read back as %+v, want %+v", back, m)
	}
	for id, want := range snaps {
		if !bytes.Equal(got[id], want) {
			t.Errorf("group %d: read %q, wrote %q", id, got[id], want)
		}
	}
	if _, sum2, err := Verify(bytes.NewReader(data)); err != nil || sum2 != sum {
		t.Errorf("Verify = %q, %v; want %q, nil", sum2, err, sum)
	}
}

// TestEveryTruncationRefused cuts the archive at every length.
func TestEveryTruncationRefused(t *testing.T) {
	data, _, _ := sample(t)
	for n := 0; n < len(data); n++ {
		_, _, err := Verify(bytes.NewReader(data[:n]))
		if !errors.Is(err, ErrDamaged) {
			t.Fatalf("archive cut to %d of %d bytes: Verify = %v, want ErrDamaged", n, len(data), err)
		}
	}
	_, _, err := Verify(bytes.NewReader(append(bytes.Clone(data), 0)))
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "follow the checksum") {
		t.Errorf("a byte after the checksum: Verify = %v", err)
	}
}

// TestEveryFlippedByteRefused flips each bit of each byte, in turn.
func TestEveryFlippedByteRefused(t *testing.T) {
	data, _, _ := sample(t)
	for i := range data {
		for bit := range 8 {
			bad := bytes.Clone(data)
			bad[i] ^= 1 << bit
			_, _, err := Verify(bytes.NewReader(bad))
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("byte %d bit %d flipped: Verify = %v, want ErrDamaged", i, bit, err)
			}
		}
	}
}

func TestClearErrors(t *testing.T) {
	data, _, _ := sample(t)
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"not a backup", func([]byte) []byte { return []byte("{\"hello\": \"world\"}") }, "not a kvnode backup"},
		{"empty", func([]byte) []byte { return nil }, "truncated in the header"},
		{"later version", func(b []byte) []byte { b[len(magic)] = Version + 1; return b }, "format version 2, this build reads version 1"},
		{"payload altered", func(b []byte) []byte { b[bytes.Index(b, []byte("partition group 1"))] ^= 0x20; return b }, "checksum mismatch"},
		{"checksum altered", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, "checksum mismatch"},
		{"cut in a group", func(b []byte) []byte { return b[:len(b)-40] }, "truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Verify(bytes.NewReader(tc.edit(bytes.Clone(data))))
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Verify = %v, want ErrDamaged saying %q", err, tc.want)
			}
		})
	}
}

func TestWriterKeepsTheManifestsWord(t *testing.T) {
	m := &Manifest{Groups: []Group{{ID: 0, Bytes: 3}, {ID: 1, Bytes: 1}}}
	w, err := NewWriter(io.Discard, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Group(1, strings.NewReader("x")); err == nil {
		t.Error("group 1 before group 0 accepted")
	}
	w, _ = NewWriter(io.Discard, m)
	if err := w.Group(0, strings.NewReader("ab")); err == nil {
		t.Error("a 2-byte snapshot the manifest says is 3 accepted")
	}
	w, _ = NewWriter(io.Discard, m)
	_ = w.Group(0, strings.NewReader("abc"))
	if err := w.Close(); err == nil {
		t.Error("Close with a group missing accepted")
	}
}
