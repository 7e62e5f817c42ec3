package codec

import (
	"hash/crc32"

	"github.com/kvnode/kvnode/internal/chunked"
)

// StageChunkBytes is the size of one chunk of a staged command: a command
// too large for one Raft entry travels as chunks and a commit (package
// fsm's stage.go has the protocol and why).
const StageChunkBytes = 1 << 20

// StageCommand splits an encoded command into the entries that carry it:
// the stage entries, then the commit entry. id must be unique among the
// staged commands of the group (the store draws it at random).
func StageCommand(id uint64, cmd []byte) [][]byte {
	var out [][]byte
	var seq uint64
	for off := 0; off < len(cmd); off += StageChunkBytes {
		end := min(off+StageChunkBytes, len(cmd))
		out = append(out, (&Command{Op: OpStage, StageID: id, StageSeq: seq, StageData: cmd[off:end]}).Encode(nil))
		seq++
	}
	commit := Command{Op: OpCommitStaged, StageID: id, StageSeq: seq, StageSize: uint64(len(cmd)), StageSum: chunked.Checksum(cmd, crc32.MakeTable(crc32.Castagnoli))}
	return append(out, commit.Encode(nil))
}

// DropStaged is the entry that forgets an unfinished staged command.
func DropStaged(id uint64) []byte {
	return (&Command{Op: OpDropStaged, StageID: id}).Encode(nil)
}
