package fsm

import "github.com/kvnode/kvnode/fsm/codec"

// The command codec moved to package codec (fsm/codec). These names keep
// the callers outside fsm building, unchanged, until they name codec
// themselves; the commit that moves them deletes this file. Nothing new
// may use them.

type (
	// Command is codec.Command.
	Command = codec.Command
	// Result is codec.Result.
	Result = codec.Result
)

// The operations the callers outside fsm send, as codec names them.
const (
	OpCreateRegion  = codec.OpCreateRegion
	OpDestroyRegion = codec.OpDestroyRegion
	OpPut           = codec.OpPut
	OpPutIfAbsent   = codec.OpPutIfAbsent
	OpReplace       = codec.OpReplace
	OpCAS           = codec.OpCAS
	OpDelete        = codec.OpDelete
	OpClear         = codec.OpClear
	OpSetMeta       = codec.OpSetMeta
	OpBatch         = codec.OpBatch
	OpClearPart     = codec.OpClearPart
	OpDeleteIf      = codec.OpDeleteIf
)

// CheckCommand is codec.CheckCommand.
func CheckCommand(b []byte) (codec.Op, error) { return codec.CheckCommand(b) }

// EncodeResult is codec.EncodeResult.
func EncodeResult(dst []byte, r *codec.Result) []byte { return codec.EncodeResult(dst, r) }

// DecodeResult is codec.DecodeResult.
func DecodeResult(b []byte) (*codec.Result, error) { return codec.DecodeResult(b) }
