package codec

import "strconv"

// Op names a replicated operation. Its numeric value is part of the on-disk
// command format: never renumber or reuse one.
type Op uint8

// The operations. The comment after each says which Command fields it uses.
const (
	OpCreateRegion  Op = 1  // Region, Kind
	OpDestroyRegion Op = 2  // Region
	OpPut           Op = 3  // Region, Entries (1..n): upsert all (single PUT and put-all)
	OpPutIfAbsent   Op = 4  // Region, Entries (exactly 1); Entries[0].Key == "" means: generate a key
	OpReplace       Op = 5  // Region, Entries (1..n): every key must exist, else nothing changes
	OpCAS           Op = 6  // Region, Pairs (1..n): every key must exist and every Old must equal current, else nothing changes
	OpDelete        Op = 7  // Region, Keys (1..n): every key must exist, else nothing is deleted
	OpClear         Op = 8  // Region: remove all entries; refused for PARTITION regions
	OpSetMeta       Op = 9  // MetaKey, MetaVersion (expected), MetaValue: compare-and-set of versioned metadata
	OpBatch         Op = 10 // Batch: encoded entry commands (put .. delete) applied in order as one entry
	OpClearPart     Op = 11 // Region, RegionID (non-zero): remove every entry of a partition group's part of the region
	OpDeleteIf      Op = 12 // Region, RegionID (0 in group 0), Entries (1..n): delete every key whose current value is exactly Value (byte for byte); every key must exist and match, else nothing changes
	OpStage         Op = 13 // StageID, StageSeq, StageData: one chunk of a large command (see fsm's stage.go)
	OpCommitStaged  Op = 14 // StageID, StageSeq (chunk count), StageSize, StageSum: apply the command the staged chunks make up
	OpDropStaged    Op = 15 // StageID: forget an unfinished staged command
	OpAlterRegion   Op = 16 // Region, TTL: change a region's default entry time-to-live (group 0)
	OpExpire        Op = 17 // Region, RegionID, Keys, Now: remove each key whose deadline is not after Now (the others are left alone)
)

// MaxOp is the highest Op this build knows: a dispatch table indexed by Op
// (the state machine's) needs one slot per value up to it.
const MaxOp = OpExpire

// String returns the operation's name as it appears in error messages and in
// the golden file names (testdata/golden/<name>.bin).
func (o Op) String() string {
	switch o {
	case OpCreateRegion:
		return "create-region"
	case OpDestroyRegion:
		return "destroy-region"
	case OpPut:
		return "put"
	case OpPutIfAbsent:
		return "put-if-absent"
	case OpReplace:
		return "replace"
	case OpCAS:
		return "cas"
	case OpDelete:
		return "delete"
	case OpClear:
		return "clear"
	case OpSetMeta:
		return "set-meta"
	case OpBatch:
		return "batch"
	case OpClearPart:
		return "clear-part"
	case OpDeleteIf:
		return "delete-if"
	case OpStage:
		return "stage"
	case OpCommitStaged:
		return "commit-staged"
	case OpDropStaged:
		return "drop-staged"
	case OpAlterRegion:
		return "alter-region"
	case OpExpire:
		return "expire"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// known reports whether this build can decode and apply o.
func (o Op) known() bool { return o >= OpCreateRegion && o <= MaxOp }

// Batchable reports whether o may be a sub-command of OpBatch: entry
// commands only. Region and metadata commands use the log index as an ID or
// version, which the sub-commands of a batch share.
func (o Op) Batchable() bool { return o >= OpPut && o <= OpDelete }

// V3Only reports whether o exists only in format version 3 (the ops added
// with entry expiry).
func (o Op) V3Only() bool { return o == OpAlterRegion || o == OpExpire }

// Timed reports whether o may carry Now and TTL (format version 3): the
// entry commands and the creation of a region (its default time-to-live).
func (o Op) Timed() bool {
	return o == OpCreateRegion || (o >= OpPut && o <= OpDelete) || o == OpDeleteIf || o.V3Only()
}

// Staging reports whether o is one of the ops that carry a large command in
// chunks (package fsm's stage.go has the protocol).
func (o Op) Staging() bool { return o == OpStage || o == OpCommitStaged || o == OpDropStaged }
