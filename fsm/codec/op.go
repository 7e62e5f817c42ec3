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
	OpBucket        Op = 18 // BucketAction, Bucket, MoveID, Buckets (BucketInit): a step of a bucket's move between partition groups (fsm's buckets.go)
	OpBucketImport  Op = 19 // Region, RegionID, Bucket, MoveID, Entries, Expires: entries of a bucket moving into this group
)

// MaxOp is the highest Op this build knows: a dispatch table indexed by Op
// (the state machine's) needs one slot per value up to it.
const MaxOp = OpBucketImport

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
	case OpBucket:
		return "bucket"
	case OpBucketImport:
		return "bucket-import"
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

// V4Only reports whether o exists only in format version 4 (the ops added
// with bucket moves).
func (o Op) V4Only() bool { return o == OpBucket || o == OpBucketImport }

// BucketAction is what an OpBucket does to the bucket's state in a
// partition group (fsm's buckets.go has the moves).
type BucketAction uint8

// The bucket actions; their values are part of the command format.
const (
	// BucketInit makes the group's ownership explicit: it owns Buckets,
	// and no other.
	BucketInit BucketAction = 1
	// BucketSeal stops the group serving writes of an owned bucket that
	// is moving out (reads go on: nothing changes it while it is sealed).
	BucketSeal BucketAction = 2
	// BucketUnseal undoes a seal: the move was abandoned.
	BucketUnseal BucketAction = 3
	// BucketExpect starts a move in: the group takes imports of the bucket
	// and serves nothing of it yet.
	BucketExpect BucketAction = 4
	// BucketAdopt ends a move in: the group owns the bucket.
	BucketAdopt BucketAction = 5
	// BucketAbandon undoes an expect: the imported entries are dropped.
	BucketAbandon BucketAction = 6
	// BucketRelease ends a move out: the group drops the bucket's entries
	// and owns it no more.
	BucketRelease BucketAction = 7
)

func (a BucketAction) known() bool { return a >= BucketInit && a <= BucketRelease }

func (a BucketAction) String() string {
	switch a {
	case BucketInit:
		return "init"
	case BucketSeal:
		return "seal"
	case BucketUnseal:
		return "unseal"
	case BucketExpect:
		return "expect"
	case BucketAdopt:
		return "adopt"
	case BucketAbandon:
		return "abandon"
	case BucketRelease:
		return "release"
	}
	return "BucketAction(" + strconv.Itoa(int(a)) + ")"
}

// Staging reports whether o is one of the ops that carry a large command in
// chunks (package fsm's stage.go has the protocol).
func (o Op) Staging() bool { return o == OpStage || o == OpCommitStaged || o == OpDropStaged }
