package codec

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// orderValue is a 219-byte order-like value, as the REST samples use.
const orderValue = `{"@type":"Order","purchaseOrderNo":1121,"customerId":1012,"description":"Order for XYZ Corp",` +
	`"orderDate":"02/10/2024","email":"jelly@example.com","totalPrice":225.5,` +
	`"items":[{"itemNo":1,"quantity":5,"unitPrice":45.1}]}`

// goldenCommands holds one fixed command per op. Their encodings in
// testdata/golden/<op>.bin pin the command format: committed entries are
// replayed forever, so these bytes must keep decoding to these commands.
func goldenCommands() []Command {
	return []Command{
		{Op: OpCreateRegion, Region: "orders", Kind: region.Partition},
		{Op: OpDestroyRegion, Region: "orders"},
		{Op: OpPut, Region: "orders", Entries: []region.Entry{
			{Key: "1", Value: []byte(orderValue)},
			{Key: "ключ", Value: []byte(`{}`)},
			{Key: "日本/🙂", Value: []byte(`{"a":[1,2.5,"é",null,true]}`)},
		}},
		{Op: OpPutIfAbsent, Region: "orders", Entries: []region.Entry{{Key: "", Value: []byte(`{"@type":"Order","id":7}`)}}},
		{Op: OpReplace, Region: "orders", Entries: []region.Entry{
			{Key: "k1", Value: []byte(`{"v":1}`)},
			{Key: "clé", Value: []byte(`{}`)},
		}},
		{Op: OpCAS, Region: "orders", Pairs: []region.CASPair{
			{Key: "k1", Old: []byte(`{"v":1}`), New: []byte(`{"v":2}`)},
			{Key: "ñ", Old: []byte(`{}`), New: []byte(`{"x":null}`)},
		}},
		{Op: OpDelete, Region: "orders", Keys: []string{"k1", "ключ", "🙂"}},
		{Op: OpClear, Region: "orders"},
	}
}

// goldenCommandsV2 holds commands that need format version 2: partition
// group commands (with a region ID), set-meta, and the ops added after
// version 1 (batch, clear-part, delete-if). Their encodings in
// testdata/golden/v2-<op>.bin pin version 2.
func goldenCommandsV2() []Command {
	return []Command{
		{Op: OpPut, Region: "orders", RegionID: 17, Entries: []region.Entry{
			{Key: "1", Value: []byte(`{"a":1}`)},
			{Key: "日本", Value: []byte(`{}`)},
		}},
		{Op: OpPutIfAbsent, Region: "orders", RegionID: 300, Entries: []region.Entry{{Key: "", Value: []byte(`{"g":1}`)}}},
		{Op: OpCAS, Region: "orders", RegionID: 5, Pairs: []region.CASPair{{Key: "k", Old: []byte(`{"v":1}`), New: []byte(`{"v":2}`)}}},
		{Op: OpDestroyRegion, Region: "orders", RegionID: 1 << 40},
		{Op: OpClearPart, Region: "events", RegionID: 7},
		{Op: OpDeleteIf, Region: "orders", Entries: []region.Entry{
			{Key: "k1", Value: []byte(`{"v":1}`)},
			{Key: "日本", Value: []byte(`{}`)},
		}},
		{Op: OpSetMeta, MetaKey: "partition/table", MetaVersion: 42, MetaValue: []byte(`{"replicationFactor":3,"groups":[]}`)},
		{Op: OpBatch, Batch: [][]byte{
			(&Command{Op: OpPut, Region: "orders", Entries: entries("a", `{"v":1}`)}).Encode(nil),
			(&Command{Op: OpDelete, Region: "p", RegionID: 9, Keys: []string{"k"}}).Encode(nil),
		}},
		{Op: OpStage, StageID: 0x9e3779b97f4a7c15, StageSeq: 3, StageData: []byte{1, 3, 1, 'r', 0, 0xff}},
		{Op: OpCommitStaged, StageID: 0x9e3779b97f4a7c15, StageSeq: 4, StageSize: 3<<20 + 17, StageSum: 0xdeadbeef},
		{Op: OpDropStaged, StageID: 1},
	}
}

// goldenCommandsV3 holds commands that need format version 3: those
// carrying time (the clock of the member that made them, a time-to-live)
// and the ops added with expiry. testdata/golden/v3-<op>.bin pin them.
func goldenCommandsV3() []Command {
	return []Command{
		{Op: OpCreateRegion, Region: "sessions", Kind: region.Replicate, TTL: 60_000},
		{Op: OpPut, Region: "sessions", Entries: entries("s1", `{"u":"ann"}`), Now: 1_795_000_000_123, TTL: 30_000},
		{Op: OpPutIfAbsent, Region: "orders", RegionID: 300, Entries: entries("", `{"g":1}`), Now: 1_795_000_000_124},
		{Op: OpReplace, Region: "orders", RegionID: 9, Entries: entries("k", `{"v":2}`), Now: 1_795_000_000_125, TTL: 1},
		{Op: OpCAS, Region: "orders", Pairs: []region.CASPair{{Key: "k", Old: []byte(`{"v":1}`), New: []byte(`{"v":2}`)}}, Now: 1_795_000_000_126},
		{Op: OpDelete, Region: "orders", RegionID: 4, Keys: []string{"k1", "ключ"}, Now: 1_795_000_000_127},
		{Op: OpDeleteIf, Region: "orders", Entries: entries("k", `{}`), Now: 1_795_000_000_128},
		{Op: OpAlterRegion, Region: "sessions"},
		{Op: OpExpire, Region: "sessions", RegionID: 12, Keys: []string{"s1", "s2"}, Now: 1_795_000_001_000},
	}
}

// goldenCommandsV4 holds the ops added with bucket moves, which exist only
// in format version 4. testdata/golden/v4-<op>.bin pin them.
func goldenCommandsV4() []Command {
	return []Command{
		{Op: OpBucket, BucketAction: BucketInit, Buckets: []uint64{0, 4, 8, 112}},
		{Op: OpBucketImport, Region: "orders", RegionID: 300, Bucket: 17, MoveID: 0x9e3779b97f4a7c15, Entries: []region.Entry{
			{Key: "k1", Value: []byte(`{"v":1}`)},
			{Key: "日本", Value: []byte(`{}`)},
		}, Expires: []uint64{0, 1_795_000_000_123}},
	}
}

func TestCommandGolden(t *testing.T) {
	cmds := goldenCommands()
	if len(cmds) != int(OpClear) {
		t.Fatalf("goldenCommands has %d commands, want one per version-1 op (%d)", len(cmds), OpClear)
	}
	type named struct {
		name string
		c    Command
	}
	var all []named
	for _, c := range cmds {
		all = append(all, named{c.Op.String() + ".bin", c})
	}
	for _, c := range goldenCommandsV2() {
		all = append(all, named{"v2-" + c.Op.String() + ".bin", c})
	}
	for _, c := range goldenCommandsV3() {
		all = append(all, named{"v3-" + c.Op.String() + ".bin", c})
	}
	for _, c := range goldenCommandsV4() {
		all = append(all, named{"v4-" + c.Op.String() + ".bin", c})
	}
	for _, nc := range all {
		c, name := nc.c, nc.name
		t.Run(name, func(t *testing.T) {
			if want := c.version(); (want == commandV2) != strings.HasPrefix(name, "v2-") || (want == commandV3) != strings.HasPrefix(name, "v3-") || (want == commandV4) != strings.HasPrefix(name, "v4-") {
				t.Fatalf("%s: Encode picks format version %d", name, want)
			}
			golden(t, name, c.Encode(nil))
			got, err := DecodeCommand(readGolden(t, name))
			if err != nil {
				t.Fatalf("DecodeCommand(%s): %v", name, err)
			}
			if !reflect.DeepEqual(got, c) {
				t.Errorf("DecodeCommand(%s) = %+v, want %+v", name, got, c)
			}
		})
	}
}

// TestCommandLayout spells out one encoding byte by byte, so a reader of
// DESIGN.md can check the description against the code.
func TestCommandLayout(t *testing.T) {
	c := Command{Op: OpCAS, Region: "r", Pairs: []region.CASPair{{Key: "k", Old: []byte("{}"), New: []byte(`{"a":1}`)}}}
	want := []byte{1, byte(OpCAS), 1, 'r', 1, 1, 'k', 2, '{', '}', 7}
	want = append(want, `{"a":1}`...)
	if got := c.Encode(nil); !bytes.Equal(got, want) {
		t.Errorf("Encode = %q, want %q", got, want)
	}
}

func TestEncodeAppends(t *testing.T) {
	c := Command{Op: OpDelete, Region: "r", Keys: []string{"a"}}
	prefix := []byte("prefix")
	got := c.Encode(append([]byte(nil), prefix...))
	if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], c.Encode(nil)) {
		t.Errorf("Encode(prefix) = %q, want prefix followed by %q", got, c.Encode(nil))
	}
}

// TestEncodeWritesOnlyUsedFields: fields an op does not use are not encoded,
// so decoding yields them empty.
func TestEncodeWritesOnlyUsedFields(t *testing.T) {
	c := Command{Op: OpClear, Region: "r", Kind: region.Replicate, Keys: []string{"x"},
		Entries: entries("k", "{}"), Pairs: []region.CASPair{{Key: "k"}}}
	got, err := DecodeCommand(c.Encode(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Command{Op: OpClear, Region: "r"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v, want %+v", got, want)
	}
}

func TestDecodeDoesNotAlias(t *testing.T) {
	c := Command{Op: OpCAS, Region: "orders", Pairs: []region.CASPair{{Key: "k", Old: []byte(`{"a":1}`), New: []byte(`{"a":2}`)}}}
	b := c.Encode(nil)
	got, err := DecodeCommand(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 'X'
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("after overwriting the input, decoded command is %+v, want %+v", got, c)
	}
	if cap(got.Pairs[0].Old) != len(got.Pairs[0].Old) {
		t.Errorf("decoded value has cap %d, len %d: want an exact-size copy", cap(got.Pairs[0].Old), len(got.Pairs[0].Old))
	}
}

// TestDecodeNoCopyAliases: DecodeCommandNoCopy decodes what DecodeCommand
// decodes, with values that share the input's memory instead of copies.
func TestDecodeNoCopyAliases(t *testing.T) {
	c := Command{Op: OpPut, Region: "orders", Entries: entries("k", `{"a":1}`)}
	b := c.Encode(nil)
	got, err := DecodeCommandNoCopy(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("DecodeCommandNoCopy = %+v, want %+v", got, c)
	}
	b[len(b)-2] = '2' // the value's last digit
	if v := string(got.Entries[0].Value); v != `{"a":2}` {
		t.Errorf("after changing the input, the decoded value is %s, want %s (an alias)", v, `{"a":2}`)
	}
	if cap(got.Entries[0].Value) != len(got.Entries[0].Value) {
		t.Errorf("decoded value has cap %d, len %d: appending to it would write into the input", cap(got.Entries[0].Value), len(got.Entries[0].Value))
	}
}

func TestDecodeCommandRejects(t *testing.T) {
	uv := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	put := Command{Op: OpPut, Region: "r", Entries: entries("k", "{}")}
	for _, tc := range []struct {
		name string
		in   []byte
		want string // substring of the error
	}{
		{"empty", nil, "truncated"},
		{"version only", []byte{1}, "truncated"},
		{"version 0", []byte{0, 3, 0}, "format version 0"},
		{"version 5", []byte{5, 3, 0}, "format version 5 was written by a newer kvnode"},
		{"put in version 4", []byte{4, 3, 0}, "put has no format version 4"},
		{"bucket in version 3", []byte{3, 18, 1, 0, 0, 0}, "bucket needs format version 4"},
		{"unknown bucket action", []byte{4, 18, 9, 0, 0, 0}, "unknown bucket action 9"},
		{"bucket import with more entries than bytes", []byte{4, 19, 1, 'r', 1, 2, 3, 1, 1, 'k'}, "exceeds what the remaining"},
		{"version 3 without time", []byte{3, byte(OpDelete), 1, 'r', 0, 1, 1, 'k', 0, 0}, "no time in a version 3 delete command: version 1 encodes it"},
		{"version 3 partition command without time", []byte{3, byte(OpDelete), 1, 'r', 7, 1, 1, 'k', 0, 0}, "version 2 encodes it"},
		{"version 3 clear", []byte{3, byte(OpClear), 1, 'r', 0, 1, 0}, "clear has no format version 3"},
		{"alter-region in version 2", []byte{2, byte(OpAlterRegion), 1, 'r', 1}, "needs format version 3"},
		{"expire in version 1", []byte{1, byte(OpExpire), 1, 'r', 1, 1, 'k'}, "needs format version 3"},
		{"version 3 without its time", []byte{3, byte(OpExpire), 1, 'r', 0, 1, 1, 'k'}, "truncated: missing now"},
		{"op 0", []byte{1, 0, 0}, "unknown op 0"},
		{"op 20", []byte{1, 20, 0}, "unknown op 20"},
		{"stage in version 1", []byte{1, byte(OpStage), 1, 0, 0}, "needs format version 2"},
		{"delete-if in version 1", []byte{1, byte(OpDeleteIf), 1, 'r', 1, 1, 'k', 2, '{', '}'}, "needs format version 2"},
		{"clear-part in version 1", []byte{1, 11, 0}, "needs format version 2"},
		{"batch in version 1", []byte{1, byte(OpBatch), 0}, "needs format version 2"},
		{"empty batch", []byte{2, byte(OpBatch), 0}, "empty batch"},
		{"nested batch", cat([]byte{2, byte(OpBatch), 1}, uv(uint64(len(nestedBatch()))), nestedBatch()), "cannot be batched"},
		{"batched create-region", cat([]byte{2, byte(OpBatch), 1}, uv(uint64(len(createCmd()))), createCmd()), "cannot be batched"},
		{"batched garbage", []byte{2, byte(OpBatch), 1, 4, 9, 9, 9, 9}, "sub-command 0"},
		{"set-meta in version 1", []byte{1, byte(OpSetMeta), 1, 'k', 0, 0}, "needs format version 2"},
		{"version 2 without region id", []byte{2, byte(OpClear), 1, 'r'}, "truncated"},
		{"version 2 with region id 0", []byte{2, byte(OpClear), 1, 'r', 0}, "region id 0"},
		{"set-meta truncated", []byte{2, byte(OpSetMeta), 1, 'k', 5}, "truncated"},
		{"op 255", []byte{1, 255, 0}, "unknown op 255"},
		{"missing region", []byte{1, byte(OpClear)}, "truncated"},
		{"region longer than input", []byte{1, byte(OpClear), 5, 'a'}, "needs 5 bytes"},
		{"trailing byte", append(Command{Op: OpClear, Region: "r"}.encode(), 0), "trailing"},
		{"trailing after put", append(put.encode(), 'x'), "trailing"},
		{"hostile entry count", cat([]byte{1, byte(OpPut), 1, 'r'}, uv(1<<62), []byte{1, 'k', 2, '{', '}'}), "exceeds"},
		{"hostile key count", cat([]byte{1, byte(OpDelete), 1, 'r'}, uv(1<<40)), "exceeds"},
		{"hostile pair count", cat([]byte{1, byte(OpCAS), 1, 'r'}, uv(2), []byte{0, 0, 0}), "exceeds"},
		{"fewer keys than counted", cat([]byte{1, byte(OpDelete), 1, 'r', 2, 1, 'a'}), "truncated"},
		{"hostile value length", cat([]byte{1, byte(OpPut), 1, 'r', 1, 1, 'k'}, uv(1<<50), []byte("{}")), "needs"},
		{"non-minimal varint", []byte{1, byte(OpClear), 0x81, 0x00, 'r'}, "minimal"},
		{"varint overflow", cat([]byte{1, byte(OpClear)}, bytes.Repeat([]byte{0xff}, 10), []byte{1}), "overflow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeCommand(tc.in)
			if err == nil {
				t.Fatalf("DecodeCommand(%x) = %+v, nil; want an error containing %q", tc.in, got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("DecodeCommand(%x) error = %q, want it to contain %q", tc.in, err, tc.want)
			}
		})
	}
}

// TestDecodeEveryTruncation: no proper prefix of a valid command decodes.
func TestDecodeEveryTruncation(t *testing.T) {
	for _, c := range slices.Concat(goldenCommands(), goldenCommandsV2(), goldenCommandsV3()) {
		b := c.Encode(nil)
		for n := 0; n < len(b); n++ {
			if got, err := DecodeCommand(b[:n]); err == nil {
				t.Errorf("%v: DecodeCommand of the first %d of %d bytes = %+v, nil; want an error", c.Op, n, len(b), got)
			}
		}
	}
}

func TestUnknownOpEncodingIsRefused(t *testing.T) {
	c := Command{Op: Op(42), Region: "r"}
	if _, err := DecodeCommand(c.Encode(nil)); err == nil {
		t.Error("DecodeCommand accepted an encoded unknown op, want an error")
	}
}

func TestOpString(t *testing.T) {
	seen := map[string]bool{}
	for op := OpCreateRegion; op <= MaxOp; op++ {
		s := op.String()
		if strings.HasPrefix(s, "Op(") || seen[s] {
			t.Errorf("Op(%d).String() = %q, want a unique name", op, s)
		}
		seen[s] = true
	}
	if got, want := Op(0).String(), "Op(0)"; got != want {
		t.Errorf("Op(0).String() = %q, want %q", got, want)
	}
}

// encode is Encode on a value, for table literals.
func (c Command) encode() []byte { return c.Encode(nil) }

func nestedBatch() []byte {
	inner := (&Command{Op: OpPut, Region: "r", Entries: entries("k", "{}")}).Encode(nil)
	return (&Command{Op: OpBatch, Batch: [][]byte{inner}}).Encode(nil)
}

func createCmd() []byte {
	return (&Command{Op: OpCreateRegion, Region: "r", Kind: region.Replicate}).Encode(nil)
}

// TestCheckCommandRefusesTruncated: a command cut anywhere (as a body cut at
// a frame limit was) is refused by CheckCommand, the check every command
// passes before it enters a Raft log; the whole command is accepted.
func TestCheckCommandRefusesTruncated(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.bin"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := DecodeCommand(b)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if op, err := CheckCommand(b); err != nil || op != want.Op {
			t.Errorf("%s: CheckCommand = %v, %v; want %v", path, op, err, want.Op)
		}
		for n := 0; n < len(b); n++ {
			if _, err := CheckCommand(b[:n]); err == nil {
				t.Errorf("%s: CheckCommand accepts the first %d of %d bytes", path, n, len(b))
			}
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked %d golden commands, want every op's", checked)
	}
}

// TestAdoptFence: an adopt carries its source group and release index
// when the mover knows them, and one without them (a mover of the build
// before fences) is encoded and decoded exactly as before.
func TestAdoptFence(t *testing.T) {
	with := Command{Op: OpBucket, BucketAction: BucketAdopt, Bucket: 17, MoveID: 0x51, From: 3, FromIndex: 12_345}
	got, err := DecodeCommand(with.Encode(nil))
	if err != nil || !reflect.DeepEqual(got, with) {
		t.Errorf("adopt with a fence decoded as %+v, %v; want %+v", got, err, with)
	}
	without := Command{Op: OpBucket, BucketAction: BucketAdopt, Bucket: 17, MoveID: 0x51}
	old := []byte{commandV4, byte(OpBucket), byte(BucketAdopt), 17, 0x51, 0}
	if enc := without.Encode(nil); !bytes.Equal(enc, old) {
		t.Errorf("adopt without a fence encoded as %x, want the earlier layout %x", enc, old)
	}
	if got, err := DecodeCommand(old); err != nil || !reflect.DeepEqual(got, without) {
		t.Errorf("the earlier adopt decoded as %+v, %v; want %+v", got, err, without)
	}
	// Only an adopt has a fence: the same bytes after a release are
	// trailing garbage.
	release := append([]byte{commandV4, byte(OpBucket), byte(BucketRelease), 17, 0x51, 0}, 3, 1)
	if _, err := DecodeCommand(release); err == nil {
		t.Errorf("a release with two more uvarints decoded")
	}
}

// TestImportDrops: an import may name keys to drop after its entries (a
// move's last pass); one without them is encoded as before.
func TestImportDrops(t *testing.T) {
	with := Command{Op: OpBucketImport, Region: "orders", RegionID: 3, Bucket: 17, MoveID: 0x51,
		Entries: []region.Entry{{Key: "k1", Value: []byte(`{}`)}}, Expires: []uint64{0}, Keys: []string{"gone1", "gone2"}}
	got, err := DecodeCommand(with.Encode(nil))
	if err != nil || !reflect.DeepEqual(got, with) {
		t.Errorf("import with drops decoded as %+v, %v; want %+v", got, err, with)
	}
	without := with
	without.Keys = nil
	enc := without.Encode(nil)
	if got, err := DecodeCommand(enc); err != nil || !reflect.DeepEqual(got, without) {
		t.Errorf("import without drops decoded as %+v, %v", got, err)
	}
	if !bytes.Equal(with.Encode(nil)[:len(enc)], enc) {
		t.Errorf("the drops are not an addition at the end of the earlier layout")
	}
}
