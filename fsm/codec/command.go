package codec

import (
	"encoding/binary"
	"fmt"

	"github.com/kvnode/kvnode/internal/chunked"
	"github.com/kvnode/kvnode/region"
)

// Command format versions: the first byte of every encoded command. A
// committed entry stays in Raft logs and is replayed for as long as the
// cluster lives, so a new layout gets a new version and this build keeps
// decoding the old ones. Version 1 encodes every command it can express
// (no region ID, no metadata); version 2 adds the region ID of partition
// groups and every op added since (set-meta, batch, clear-part, delete-if),
// which have only a version-2 encoding. The encoder picks the lowest version that can
// express a command, and the decoder refuses a version-2 encoding of a
// command version 1 can express, so every command has exactly one encoding.
//
// Version 3 adds time: the leader's clock (Now, unix milliseconds) and an
// entry time-to-live (TTL, milliseconds) after the fields of version 2,
// for the entry commands, create-region (the region's default) and the
// ops added with expiry (alter-region, expire), which exist only in
// version 3.
//
// Version 4 is the ops added with bucket moves (bucket, bucket-import),
// which exist only in version 4; no other command has a version-4
// encoding.
const (
	commandV1 = 1
	commandV2 = 2
	commandV3 = 3
	commandV4 = 4
)

// Command is one replicated operation.
type Command struct {
	Op      Op
	Region  string
	Kind    region.Kind      // OpCreateRegion only
	Entries []region.Entry   // OpPut, OpPutIfAbsent, OpReplace, OpDeleteIf (the value each key must have)
	Pairs   []region.CASPair // OpCAS
	Keys    []string         // OpDelete
	// RegionID is non-zero in commands for a partition group: group 0's
	// ID of the region (the log index of its creation). See fsm/DESIGN.md.
	RegionID uint64
	// OpSetMeta: the metadata key, the version it must have now (0: it must
	// not exist), and the new value (opaque bytes).
	MetaKey     string
	MetaVersion uint64
	MetaValue   []byte
	// OpBatch: the encoded sub-commands, each a batchable op. They are
	// decoded when applied; DecodeCommand checks their structure.
	Batch [][]byte
	// OpStage, OpCommitStaged, OpDropStaged (fsm's stage.go): the staged
	// command's ID; the chunk's number (OpStage) or the number of chunks
	// (OpCommitStaged); the chunk; the whole command's size and CRC-32C.
	StageID   uint64
	StageSeq  uint64
	StageData []byte
	StageSize uint64
	StageSum  uint32
	// Now is the clock of the member that made the command, in unix
	// milliseconds (0: not stamped, a command of an older build). The
	// state machine never reads a clock: it takes time from here, and
	// never lets it go backwards (see fsm's DESIGN.md, "Expiry").
	Now uint64
	// TTL, in milliseconds: on entry writes, how long after Now the
	// written entries expire (0: never); on create-region and
	// alter-region, the region's default entry time-to-live.
	TTL uint64
	// OpBucket and OpBucketImport (fsm's buckets.go): what is done, to
	// which bucket, by which move (the mover's ID, so that a late step of
	// an abandoned move is refused); the buckets a group owns
	// (BucketInit); the deadline of each imported entry (unix ms, 0:
	// none), aligned with Entries.
	BucketAction BucketAction
	Bucket       uint64
	MoveID       uint64
	Buckets      []uint64
	Expires      []uint64
	// On an OpBucketImport, Keys are the bucket's keys to drop: entries
	// copied before the source sealed the bucket and deleted there since.
	// From and FromIndex, on a BucketAdopt: the group the bucket comes
	// from and the log index of its release there. The adopting group
	// records them as a fence in its history, so that a watch delivers
	// the source's last events of the bucket before the target's first
	// (history.Fence). 0: not known (a mover of an older build).
	From      uint64
	FromIndex uint64
}

// version is the format version Encode writes for c.
func (c *Command) version() byte {
	if c.Op.V4Only() {
		return commandV4
	}
	if c.Op.V3Only() || (c.Op.Timed() && (c.Now != 0 || c.TTL != 0)) {
		return commandV3
	}
	if c.RegionID != 0 || c.Op == OpSetMeta || c.Op == OpBatch || c.Op == OpClearPart || c.Op == OpDeleteIf || c.Op.Staging() {
		return commandV2
	}
	return commandV1
}

// Encode appends the binary encoding of c to dst and returns it. Only the
// fields c.Op uses are written (see DESIGN.md for the layout). An unknown Op
// is written as version, op and region only, which DecodeCommand refuses:
// callers must send only the Op constants of this package.
func (c *Command) Encode(dst []byte) []byte {
	// Not slices.Grow: it clears the new capacity in one call that cannot
	// be preempted, which for a 100 MiB value stalled the member (package
	// chunked); make's large allocations are cleared in steps.
	if need := c.sizeHint(); cap(dst)-len(dst) < need {
		grown := make([]byte, len(dst), len(dst)+need)
		chunked.Copy(grown, dst)
		dst = grown
	}
	v := c.version()
	dst = append(dst, v, byte(c.Op))
	if c.Op == OpSetMeta {
		dst = appendString(dst, c.MetaKey)
		dst = binary.AppendUvarint(dst, c.MetaVersion)
		return appendBytes(dst, c.MetaValue)
	}
	if c.Op == OpBatch {
		dst = binary.AppendUvarint(dst, uint64(len(c.Batch)))
		for _, sub := range c.Batch {
			dst = appendBytes(dst, sub)
		}
		return dst
	}
	switch c.Op {
	case OpStage:
		dst = binary.AppendUvarint(dst, c.StageID)
		dst = binary.AppendUvarint(dst, c.StageSeq)
		return appendBytes(dst, c.StageData)
	case OpCommitStaged:
		dst = binary.AppendUvarint(dst, c.StageID)
		dst = binary.AppendUvarint(dst, c.StageSeq)
		dst = binary.AppendUvarint(dst, c.StageSize)
		return binary.AppendUvarint(dst, uint64(c.StageSum))
	case OpDropStaged:
		return binary.AppendUvarint(dst, c.StageID)
	case OpBucket:
		dst = append(dst, byte(c.BucketAction))
		dst = binary.AppendUvarint(dst, c.Bucket)
		dst = binary.AppendUvarint(dst, c.MoveID)
		dst = binary.AppendUvarint(dst, uint64(len(c.Buckets)))
		for _, b := range c.Buckets {
			dst = binary.AppendUvarint(dst, b)
		}
		if c.BucketAction == BucketAdopt && c.From != 0 {
			// Optional, at the end: an adopt without them decodes as
			// before, and this build reads both.
			dst = binary.AppendUvarint(dst, c.From)
			dst = binary.AppendUvarint(dst, c.FromIndex)
		}
		return dst
	case OpBucketImport:
		dst = appendString(dst, c.Region)
		dst = binary.AppendUvarint(dst, c.RegionID)
		dst = binary.AppendUvarint(dst, c.Bucket)
		dst = binary.AppendUvarint(dst, c.MoveID)
		dst = binary.AppendUvarint(dst, uint64(len(c.Entries)))
		for i, e := range c.Entries {
			dst = appendString(dst, e.Key)
			dst = appendBytes(dst, e.Value)
			var exp uint64
			if i < len(c.Expires) {
				exp = c.Expires[i]
			}
			dst = binary.AppendUvarint(dst, exp)
		}
		if len(c.Keys) > 0 {
			// Optional, at the end, as an adopt's fence.
			dst = binary.AppendUvarint(dst, uint64(len(c.Keys)))
			for _, k := range c.Keys {
				dst = appendString(dst, k)
			}
		}
		return dst
	}
	dst = appendString(dst, c.Region)
	if v >= commandV2 {
		dst = binary.AppendUvarint(dst, c.RegionID)
	}
	switch c.Op {
	case OpCreateRegion:
		dst = appendString(dst, string(c.Kind))
	case OpPut, OpPutIfAbsent, OpReplace, OpDeleteIf:
		dst = binary.AppendUvarint(dst, uint64(len(c.Entries)))
		for _, e := range c.Entries {
			dst = appendString(dst, e.Key)
			dst = appendBytes(dst, e.Value)
		}
	case OpCAS:
		dst = binary.AppendUvarint(dst, uint64(len(c.Pairs)))
		for _, p := range c.Pairs {
			dst = appendString(dst, p.Key)
			dst = appendBytes(dst, p.Old)
			dst = appendBytes(dst, p.New)
		}
	case OpDelete, OpExpire:
		dst = binary.AppendUvarint(dst, uint64(len(c.Keys)))
		for _, k := range c.Keys {
			dst = appendString(dst, k)
		}
	}
	if v == commandV3 {
		dst = binary.AppendUvarint(dst, c.Now)
		dst = binary.AppendUvarint(dst, c.TTL)
	}
	return dst
}

// sizeHint is an upper bound of the encoded size, so Encode allocates once.
func (c *Command) sizeHint() int {
	const prefix = binary.MaxVarintLen64
	n := 2 + prefix + len(c.Region) + prefix + len(c.Kind) + 2*prefix +
		prefix + len(c.MetaKey) + prefix + prefix + len(c.MetaValue)
	for _, e := range c.Entries {
		n += 2*prefix + len(e.Key) + len(e.Value)
	}
	for _, p := range c.Pairs {
		n += 3*prefix + len(p.Key) + len(p.Old) + len(p.New)
	}
	for _, k := range c.Keys {
		n += prefix + len(k)
	}
	for _, b := range c.Batch {
		n += prefix + len(b)
	}
	n += 7*prefix + len(c.StageData)
	n += 4*prefix + prefix*(len(c.Buckets)+len(c.Entries))
	return n
}

// v2Only reports whether op, with a region name, has only a version-2
// encoding: ops added after version 1 (whose layout is frozen) carry the
// region id even when it is 0.
func v2Only(op Op) bool { return op == OpClearPart || op == OpDeleteIf }

// DecodeCommand parses one encoded command. Keys and values in the result
// are copies: they never alias b, so a state machine that keeps a value does
// not keep the whole log entry alive.
//
// Decoding is structural and strict (unknown version or op, truncation,
// trailing bytes, impossible counts and non-minimal varints are errors).
// Whether a well-formed command makes sense (entry counts, empty keys,
// region kinds) is decided by the state machine's Apply, which refuses it
// deterministically.
func DecodeCommand(b []byte) (Command, error) {
	return decodeCommand(decoder{buf: b})
}

// DecodeCommandNoCopy is DecodeCommand for a buffer the caller owns alone
// and never changes afterwards: the values of the result (and a batch's
// sub-commands) alias b instead of being copied, each capped at its own
// end (an append to one never writes into the next). The state machine
// uses it for every committed entry (fsm.FSM.ApplyBatch says why raft's
// entries qualify) and for a staged command it has reassembled from its
// chunks.
func DecodeCommandNoCopy(b []byte) (Command, error) {
	return decodeCommand(decoder{buf: b, alias: true})
}

// CheckCommand reports whether b is a command this build can decode, and
// its op, without copying its values. Every command is checked before it is
// appended to a Raft log, whichever node or path it came from: a command
// that does not decode would stop every replica of the group when it is
// applied (see fsm.FSM.Halted), so it must never enter a log.
func CheckCommand(b []byte) (Op, error) {
	c, err := decodeCommand(decoder{buf: b, alias: true, check: true})
	if err != nil {
		return 0, err
	}
	return c.Op, nil
}

func decodeCommand(d decoder) (Command, error) {
	v := d.u8("format version")
	if d.err == nil && v > commandV4 {
		// A newer member wrote it (a rolling upgrade writing a new
		// version before every member reads it): say so, not "damaged".
		return Command{}, fmt.Errorf("fsm: decode command: format version %d was written by a newer kvnode (this build reads versions %d to %d): upgrade this member", v, commandV1, commandV4)
	}
	if d.err == nil && v == 0 {
		return Command{}, fmt.Errorf("fsm: decode command: format version %d is not supported (this build reads versions %d to %d)", v, commandV1, commandV4)
	}
	op := Op(d.u8("op"))
	if d.err == nil && !op.known() {
		return Command{}, fmt.Errorf("fsm: decode command: unknown op %d", uint8(op))
	}
	if d.err == nil && (v == commandV4) != op.V4Only() {
		if v == commandV4 {
			return Command{}, fmt.Errorf("fsm: decode command: %v has no format version %d", op, commandV4)
		}
		return Command{}, fmt.Errorf("fsm: decode command: %v needs format version %d", op, commandV4)
	}
	if op.V4Only() {
		c, err := decodeBucket(&d, op)
		if err != nil {
			return Command{}, fmt.Errorf("fsm: decode %v command: %w", op, err)
		}
		return c, nil
	}
	if op == OpSetMeta {
		if d.err == nil && v != commandV2 {
			return Command{}, fmt.Errorf("fsm: decode command: %v needs format version %d", op, commandV2)
		}
		c := Command{Op: op, MetaKey: d.str("meta key"), MetaVersion: d.uvarint("meta version", ""), MetaValue: d.raw("meta value")}
		if err := d.finish(); err != nil {
			return Command{}, fmt.Errorf("fsm: decode %v command: %w", op, err)
		}
		return c, nil
	}
	if op == OpBatch {
		if d.err == nil && v != commandV2 {
			return Command{}, fmt.Errorf("fsm: decode command: %v needs format version %d", op, commandV2)
		}
		// A sub-command is at least version, op and a region name length.
		c := Command{Op: op, Batch: make([][]byte, d.count("sub-command", 4))}
		for i := range c.Batch {
			c.Batch[i] = d.raw("sub-command")
		}
		if err := d.finish(); err != nil {
			return Command{}, fmt.Errorf("fsm: decode %v command: %w", op, err)
		}
		if len(c.Batch) == 0 {
			return Command{}, fmt.Errorf("fsm: decode %v command: empty batch", op)
		}
		for i, sub := range c.Batch {
			// Checked only: the state machine decodes each one again
			// when it applies it.
			sc, err := decodeCommand(decoder{buf: sub, alias: true, check: true})
			if err != nil {
				return Command{}, fmt.Errorf("fsm: decode %v command: sub-command %d: %w", op, i, err)
			}
			if !sc.Op.Batchable() {
				return Command{}, fmt.Errorf("fsm: decode %v command: sub-command %d is %v, which cannot be batched", op, i, sc.Op)
			}
		}
		return c, nil
	}
	if op.Staging() {
		if d.err == nil && v != commandV2 {
			return Command{}, fmt.Errorf("fsm: decode command: %v needs format version %d", op, commandV2)
		}
		c := Command{Op: op, StageID: d.uvarint("stage id", "")}
		switch op {
		case OpStage:
			c.StageSeq = d.uvarint("chunk number", "")
			c.StageData = d.raw("chunk")
		case OpCommitStaged:
			c.StageSeq = d.uvarint("chunk", " count")
			c.StageSize = d.uvarint("staged size", "")
			sum := d.uvarint("staged checksum", "")
			if d.err == nil && sum > 1<<32-1 {
				d.fail("staged checksum %d is not 32 bits", sum)
			}
			c.StageSum = uint32(sum)
		}
		if err := d.finish(); err != nil {
			return Command{}, fmt.Errorf("fsm: decode %v command: %w", op, err)
		}
		return c, nil
	}
	if v2Only(op) && d.err == nil && v == commandV1 {
		return Command{}, fmt.Errorf("fsm: decode command: %v needs format version %d", op, commandV2)
	}
	if d.err == nil && op.V3Only() && v != commandV3 {
		return Command{}, fmt.Errorf("fsm: decode command: %v needs format version %d", op, commandV3)
	}
	if d.err == nil && v == commandV3 && !op.Timed() {
		return Command{}, fmt.Errorf("fsm: decode command: %v has no format version %d", op, commandV3)
	}
	c := Command{Op: op, Region: d.str("region name")}
	if v == commandV3 {
		c.RegionID = d.uvarint("region id", "")
	}
	if v == commandV2 {
		c.RegionID = d.uvarint("region id", "")
		// clear-part and delete-if have only a version-2 form, so their
		// region id 0 (invalid for clear-part, refused by Apply; group 0's
		// regions for delete-if) must still decode.
		if d.err == nil && c.RegionID == 0 && !v2Only(op) {
			d.fail("region id 0 in a version 2 command: version 1 encodes it")
		}
	}
	switch op {
	case OpCreateRegion:
		c.Kind = region.Kind(d.str("region kind"))
	case OpPut, OpPutIfAbsent, OpReplace, OpDeleteIf:
		// An entry is at least two one-byte lengths.
		if n := d.count("entry", 2); n > 0 {
			c.Entries = make([]region.Entry, n)
			for i := range c.Entries {
				c.Entries[i] = region.Entry{Key: d.str("key"), Value: d.raw("value")}
			}
		}
	case OpCAS:
		if n := d.count("pair", 3); n > 0 {
			c.Pairs = make([]region.CASPair, n)
			for i := range c.Pairs {
				c.Pairs[i] = region.CASPair{Key: d.str("key"), Old: d.raw("old value"), New: d.raw("new value")}
			}
		}
	case OpDelete, OpExpire:
		if n := d.count("key", 1); n > 0 {
			c.Keys = make([]string, n)
			for i := range c.Keys {
				c.Keys[i] = d.str("key")
			}
		}
	}
	if v == commandV3 {
		c.Now = d.uvarint("now", "")
		c.TTL = d.uvarint("time-to-live", "")
		if d.err == nil && !op.V3Only() && c.Now == 0 && c.TTL == 0 {
			d.fail("no time in a version 3 %v command: version %d encodes it", op, map[bool]int{true: commandV2, false: commandV1}[c.RegionID != 0 || v2Only(op)])
		}
	}
	if err := d.finish(); err != nil {
		if d.off < 2 {
			return Command{}, fmt.Errorf("fsm: decode command: %w", err)
		}
		return Command{}, fmt.Errorf("fsm: decode %v command: %w", op, err)
	}
	return c, nil
}

// decodeBucket reads the rest of an OpBucket or OpBucketImport command.
func decodeBucket(d *decoder, op Op) (Command, error) {
	c := Command{Op: op}
	if op == OpBucket {
		c.BucketAction = BucketAction(d.u8("bucket action"))
		if d.err == nil && !c.BucketAction.known() {
			d.fail("unknown bucket action %d", c.BucketAction)
		}
		c.Bucket = d.uvarint("bucket", "")
		c.MoveID = d.uvarint("move id", "")
		if n := d.count("owned bucket", 1); n > 0 {
			c.Buckets = make([]uint64, n)
			for i := range c.Buckets {
				c.Buckets[i] = d.uvarint("owned bucket", "")
			}
		}
		if c.BucketAction == BucketAdopt && d.err == nil && d.remaining() > 0 {
			c.From = d.uvarint("source group", "")
			c.FromIndex = d.uvarint("release index", "")
			if d.err == nil && c.From == 0 {
				d.fail("an adopt's fence names group 0: one without a source has no fence")
			}
		}
		return c, d.finish()
	}
	c.Region = d.str("region name")
	c.RegionID = d.uvarint("region id", "")
	c.Bucket = d.uvarint("bucket", "")
	c.MoveID = d.uvarint("move id", "")
	// An entry is at least two one-byte lengths and a one-byte deadline.
	if n := d.count("entry", 3); n > 0 {
		c.Entries = make([]region.Entry, n)
		c.Expires = make([]uint64, n)
		for i := range c.Entries {
			c.Entries[i] = region.Entry{Key: d.str("key"), Value: d.raw("value")}
			c.Expires[i] = d.uvarint("deadline", "")
		}
	}
	if d.err == nil && d.remaining() > 0 {
		n := d.count("dropped key", 1)
		if d.err == nil && n == 0 {
			d.fail("an empty list of keys to drop: an import without one has none")
		}
		if n > 0 {
			c.Keys = make([]string, n)
			for i := range c.Keys {
				c.Keys[i] = d.str("dropped key")
			}
		}
	}
	return c, d.finish()
}
