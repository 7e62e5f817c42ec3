package forward

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// FuzzServeBatch: whatever body another member sends as a batch, the
// leader either refuses it whole before applying anything, or applies each
// command once and answers every one of them, in an answer the sender
// reads back command by command.
func FuzzServeBatch(f *testing.F) {
	var ok []byte
	for _, c := range []string{"ok-1", "refuse", ""} {
		ok = binary.AppendUvarint(ok, uint64(len(c)))
		ok = append(ok, c...)
	}
	f.Add(ok)
	f.Add(ok[:len(ok)-3])
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add(bytes.Repeat([]byte{0}, 600))
	fw := testForwarder(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var applied atomic.Int64
		apply := func(_ context.Context, cmd []byte) (*codec.Result, error) {
			applied.Add(1)
			if _, err := codec.CheckCommand(cmd); err != nil {
				return nil, fmt.Errorf("bad command: %w", region.ErrNotLeader)
			}
			return &codec.Result{Key: string(cmd)}, nil
		}
		out, err := ServeBatch(context.Background(), body, testCodes, apply)
		if err != nil {
			if applied.Load() != 0 {
				t.Fatalf("refused (%v) after applying %d commands", err, applied.Load())
			}
			return
		}
		n := int(applied.Load())
		if n > maxForwardBatch {
			t.Fatalf("applied %d commands of one batch, more than %d", n, maxForwardBatch)
		}
		br := bufio.NewReader(bytes.NewReader(out))
		for i := range n {
			var o fwdOutcome
			if err := fw.readBatchAnswer(br, "leader", &o); err != nil {
				t.Fatalf("answer %d of %d does not read: %v", i, n, err)
			}
			if o.err == nil && o.res == nil {
				t.Fatalf("answer %d has neither a result nor an error", i)
			}
		}
		if br.Buffered() != 0 {
			t.Fatalf("%d bytes after the %d answers", br.Buffered(), n)
		}
	})
}

// FuzzBatchAnswer: a broken or hostile leader's answer to a batch reads as
// outcomes or fails with an error; it never panics or allocates more than
// arrived.
func FuzzBatchAnswer(f *testing.F) {
	out, err := ServeBatch(context.Background(), []byte{3, 'a', 'b', 'c'}, testCodes, func(context.Context, []byte) (*codec.Result, error) {
		return nil, region.ErrNotLeader
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(out)
	f.Add([]byte{batchResult, 0xff, 0xff, 0xff, 0x1f})
	f.Add([]byte{batchError, 1, 'x'})
	fw := testForwarder(f)
	f.Fuzz(func(t *testing.T, answer []byte) {
		br := bufio.NewReader(bytes.NewReader(answer))
		for range 4 {
			var o fwdOutcome
			if err := fw.readBatchAnswer(br, "leader", &o); err != nil {
				return
			}
			if (o.err == nil) == (o.res == nil) {
				t.Fatalf("an answer that read has result %v and error %v: want one of them", o.res, o.err)
			}
		}
	})
}
