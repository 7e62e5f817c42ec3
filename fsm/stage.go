package fsm

import (
	"fmt"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/internal/chunked"
	"github.com/kvnode/kvnode/region"
)

// Staged commands carry a command too large for one Raft entry in several.
//
// Why: hashicorp/raft's transport and raft-boltdb decode an entry's data with
// go-msgpack, which reads a byte slice in 256 KiB steps and copies everything
// read so far at each step. Decoding an entry is quadratic in its size: about
// 20 GB of memory copied for a 100 MiB entry, seconds of CPU on every
// follower, in non-preemptible copies that hold up the garbage collector's
// stop-the-world phases. Followers then answered heartbeats too late, the
// leader lost its lease while committing, and the next leader did the same
// with the entry still in its log: a 100 MiB write could not be committed.
// The store sends a command over codec.StageChunkBytes as chunks of that size
// (linear to decode), then a commit entry:
//
//	stage(id, 0, chunk0) ... stage(id, n-1, chunkN-1), commit-staged(id, n, size, crc)
//
// The state machine keeps the chunks of one staged command (state.stage);
// the commit checks their number, total size and CRC-32C, decodes the
// command they make up and applies it at the commit's index, with its
// result as the commit's result. Everything is decided from the log alone,
// so every replica does the same:
//
//   - chunk 0 starts a staged command, replacing any unfinished one (the
//     store stages one command at a time per group);
//   - a chunk out of sequence, or a commit that does not match, drops the
//     staged chunks; such a commit is refused with region.ErrNoLeader: the
//     command was not applied, and the client may send it again;
//   - drop-staged forgets it (the store's clean-up after a failure), and so
//     does any command applied more than maxStageGap entries after the last
//     chunk (a leader that died half-way);
//   - no snapshot is taken while chunks are staged (Snapshot refuses), so
//     snapshots never need to hold them: a replica that restores one
//     replays the chunks from the log after it.
const (
	// maxStageGap is how many entries after its last chunk an unfinished
	// staged command is forgotten.
	maxStageGap = 4096
	// maxStagedBytes bounds what chunks can hold (more than any command
	// the store sends: bodies are at most 1 GiB).
	maxStagedBytes = 2 << 30
)

// staging is the unfinished staged command.
type staging struct {
	id     uint64
	chunks [][]byte
	size   uint64
	last   uint64 // log index of the last chunk
}

// stageChunk records one chunk.
func (s *state) stageChunk(c *codec.Command, index uint64) *codec.Result {
	if c.StageSeq == 0 {
		s.stage = &staging{id: c.StageID, chunks: [][]byte{c.StageData}, size: uint64(len(c.StageData)), last: index}
		return &codec.Result{}
	}
	st := s.stage
	if st == nil || st.id != c.StageID || uint64(len(st.chunks)) != c.StageSeq || st.size+uint64(len(c.StageData)) > maxStagedBytes {
		s.stage = nil
		return refuse(fmt.Errorf("%v %x: %w: chunk %d does not follow the staged chunks", c.Op, c.StageID, region.ErrInvalid, c.StageSeq))
	}
	st.chunks = append(st.chunks, c.StageData)
	st.size += uint64(len(c.StageData))
	st.last = index
	return &codec.Result{}
}

// dropStaged forgets the staged command c names.
func (s *state) dropStaged(c *codec.Command, _ uint64) *codec.Result {
	if s.stage != nil && s.stage.id == c.StageID {
		s.stage = nil
	}
	return &codec.Result{}
}

// expireStage forgets a staged command whose last chunk is more than
// maxStageGap entries before index.
func (s *state) expireStage(index uint64) {
	if s.stage != nil && index > s.stage.last+maxStageGap {
		s.stage = nil
	}
}

// commitStaged applies the command the staged chunks make up, at index.
func (s *state) commitStaged(ops *handlers, c *codec.Command, index uint64) *codec.Result {
	st := s.stage
	s.stage = nil
	incomplete := func(format string, args ...any) *codec.Result {
		return refuse(fmt.Errorf("%v %x: %w: the staged command is incomplete (%s); nothing was written, send it again",
			c.Op, c.StageID, region.ErrNoLeader, fmt.Sprintf(format, args...)))
	}
	switch {
	case st == nil || st.id != c.StageID:
		return incomplete("no chunks staged under this id")
	case uint64(len(st.chunks)) != c.StageSeq:
		return incomplete("%d chunks staged, %d sent", len(st.chunks), c.StageSeq)
	case st.size != c.StageSize:
		return incomplete("%d bytes staged, %d sent", st.size, c.StageSize)
	}
	whole := make([]byte, 0, st.size)
	for _, ch := range st.chunks {
		whole = chunked.Append(whole, ch) // a preemption point per chunk
	}
	if sum := chunked.Checksum(whole, castagnoli()); sum != c.StageSum {
		return incomplete("CRC-32C %08x, the commit says %08x", sum, c.StageSum)
	}
	// whole is ours alone: the command's values may alias it.
	cmd, err := codec.DecodeCommandNoCopy(whole)
	if err != nil {
		return refuse(fmt.Errorf("%v %x: %w: the staged command does not decode: %v", c.Op, c.StageID, region.ErrInvalid, err))
	}
	if cmd.Op == codec.OpBatch || cmd.Op.Staging() {
		return refuse(fmt.Errorf("%v %x: %w: a staged command cannot be %v", c.Op, c.StageID, region.ErrInvalid, cmd.Op))
	}
	s.advance(cmd.Now)
	return ops[cmd.Op](s, &cmd, index)
}
