package forward

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/transport"
)

// muxListener strips the internal port's connection header, so a plain
// http.Server can play another member's RPC server.
type muxListener struct{ net.Listener }

func (l muxListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, 2)
	if _, err := io.ReadFull(c, hdr); err != nil {
		c.Close()
		return l.Accept()
	}
	return c, nil
}

// fakeLeader serves mux's handlers as a member's internal port.
func fakeLeader(t *testing.T, mux *http.ServeMux) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(muxListener{ln}) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// echoCommands decodes a batch body; the fake leader answers each command
// with a Result whose key is the command's bytes.
func echoCommands(t *testing.T, body []byte) [][]byte {
	var cmds [][]byte
	for len(body) > 0 {
		n, k := binary.Uvarint(body)
		if k <= 0 {
			t.Errorf("malformed batch")
			return nil
		}
		cmds = append(cmds, body[k:k+int(n)])
		body = body[k+int(n):]
	}
	return cmds
}

func appendResult(out []byte, res *codec.Result) []byte {
	b := codec.EncodeResult(nil, res)
	out = append(out, batchResult)
	out = binary.AppendUvarint(out, uint64(len(b)))
	return append(out, b...)
}

func appendError(out []byte, code, msg string) []byte {
	out = append(out, batchError)
	out = binary.AppendUvarint(out, uint64(len(code)))
	out = append(out, code...)
	out = binary.AppendUvarint(out, uint64(len(msg)))
	return append(out, msg...)
}

// testCodes are a store's error codes, as far as these tests need them.
var testCodes = transport.Codes{
	{Code: "not-leader", Err: region.ErrNotLeader},
	{Code: "no-leader", Err: region.ErrNoLeader},
	{Code: "indeterminate", Err: region.ErrIndeterminate},
}

// singleApply is the store's apply RPC, as a fake leader serves it.
func singleApply(c *transport.Client) Single {
	return func(ctx context.Context, addr string, gid uint64, cmd []byte) (*codec.Result, error) {
		data, err := c.Call(ctx, http.MethodPost, addr, fmt.Sprintf("/v1/groups/%d/apply", gid), cmd)
		if err != nil {
			return nil, err
		}
		return codec.DecodeResult(data)
	}
}

func testForwarder(t testing.TB) *Forwarder {
	c := transport.NewClient(&transport.Dialer{Net: &net.Dialer{Timeout: time.Second}}, transport.DefaultFrameBytes, testCodes)
	t.Cleanup(c.Close)
	return New(c, testCodes, singleApply(c))
}

// TestForwardsAreBatched: writes forwarded to a leader while one batch is
// on its way go together in the next, each caller gets the answer to its
// own command, and a lone write goes at once, by itself.
func TestForwardsAreBatched(t *testing.T) {
	var batches, commands, singles atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/groups/{gid}/applybatch", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cmds := echoCommands(t, body)
		batches.Add(1)
		commands.Add(int64(len(cmds)))
		time.Sleep(20 * time.Millisecond) // a commit's worth of time
		var out []byte
		for _, c := range cmds {
			out = appendResult(out, &codec.Result{Key: string(c)})
		}
		_, _ = w.Write(out)
	})
	mux.HandleFunc("POST /v1/groups/{gid}/apply", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		singles.Add(1)
		time.Sleep(20 * time.Millisecond)
		_, _ = w.Write(codec.EncodeResult(nil, &codec.Result{Key: string(body)}))
	})
	addr := fakeLeader(t, mux)
	f := testForwarder(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if res, err := f.Apply(ctx, addr, 1, []byte("alone")); err != nil || res.Key != "alone" || singles.Load() != 1 || batches.Load() != 0 {
		t.Fatalf("a lone write: %+v, %v; %d single and %d batch RPCs, want it sent by itself", res, err, singles.Load(), batches.Load())
	}

	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := fmt.Sprintf("cmd-%d", i)
			res, err := f.Apply(ctx, addr, 1, []byte(cmd))
			if err != nil || res.Key != cmd {
				t.Errorf("%s answered %+v, %v", cmd, res, err)
			}
		}()
	}
	wg.Wait()
	rpcs := singles.Load() - 1 + batches.Load()
	if got := commands.Load() + singles.Load() - 1; got != n {
		t.Errorf("the leader received %d commands, want %d", got, n)
	}
	if rpcs > n/4 {
		t.Errorf("%d concurrent writes took %d RPCs; want them batched (at most %d)", n, rpcs, n/4)
	}
	t.Logf("%d writes in %d RPCs (%d batches)", n, rpcs, batches.Load())
}

// TestForwardBatchAnswers: each command of a batch gets its own outcome
// (a result, a refusal keeping its sentinel, an error of an unknown
// code); an answer cut short leaves the unanswered ones unknown, never
// refused; a refusal of the whole batch is every command's.
func TestForwardBatchAnswers(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/groups/1/applybatch", func(w http.ResponseWriter, r *http.Request) {
		out := appendResult(nil, &codec.Result{Key: "ok"})
		out = appendError(out, "not-leader", "moved on")
		out = appendError(out, "from-the-future", "what")
		_, _ = w.Write(out)
	})
	mux.HandleFunc("POST /v1/groups/2/applybatch", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(appendResult(nil, &codec.Result{Key: "first"})[:5]) // cut mid-answer
	})
	mux.HandleFunc("POST /v1/groups/3/applybatch", func(w http.ResponseWriter, r *http.Request) {
		testCodes.WriteError(w, fmt.Errorf("not me: %w", region.ErrNotLeader))
	})
	addr := fakeLeader(t, mux)
	f := testForwarder(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmds := [][]byte{[]byte("a"), []byte("b"), []byte("c")}

	outs := f.applyBatch(ctx, addr, 1, cmds)
	if outs[0].err != nil || outs[0].res.Key != "ok" {
		t.Errorf("command 0: %+v", outs[0])
	}
	if !errors.Is(outs[1].err, region.ErrNotLeader) {
		t.Errorf("command 1: %v, want ErrNotLeader (retried)", outs[1].err)
	}
	if err := outs[2].err; err == nil || errors.Is(err, region.ErrNotLeader) || errors.Is(err, region.ErrNoLeader) || errors.Is(err, region.ErrIndeterminate) {
		t.Errorf("command 2 (unknown code): %v, want a plain refusal", err)
	}

	for i, o := range f.applyBatch(ctx, addr, 2, cmds) {
		if !errors.Is(o.err, region.ErrIndeterminate) {
			t.Errorf("cut answer, command %d: %+v, want an unknown outcome", i, o)
		}
	}
	for i, o := range f.applyBatch(ctx, addr, 3, cmds) {
		if !errors.Is(o.err, region.ErrNotLeader) {
			t.Errorf("refused batch, command %d: %v, want every command refused as not-leader", i, o.err)
		}
	}
}

// TestForwardToAnOlderLeader: a leader that does not know the batch RPC
// (404) gets the commands one by one.
func TestForwardToAnOlderLeader(t *testing.T) {
	var singles atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/groups/{gid}/apply", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		singles.Add(1)
		_, _ = w.Write(codec.EncodeResult(nil, &codec.Result{Key: string(body)}))
	})
	addr := fakeLeader(t, mux)
	f := testForwarder(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	outs := f.applyBatch(ctx, addr, 1, [][]byte{[]byte("x"), []byte("y")})
	for i, want := range []string{"x", "y"} {
		if outs[i].err != nil || outs[i].res.Key != want {
			t.Errorf("command %d: %+v", i, outs[i])
		}
	}
	if singles.Load() != 2 {
		t.Errorf("%d single applies, want 2", singles.Load())
	}
}

// TestQueuedForwardsWhoseCallerGaveUp: a command whose caller gave up
// while it waited for the previous batch is never sent, and its caller is
// told so (a definite refusal, not an unknown outcome).
func TestQueuedForwardsWhoseCallerGaveUp(t *testing.T) {
	f := testForwarder(t)
	gone, stop := context.WithCancel(context.Background())
	stop()
	dead := &fwdCall{ctx: gone, data: []byte("a"), done: make(chan fwdOutcome, 1)}
	live := &fwdCall{ctx: context.Background(), data: []byte("b"), done: make(chan fwdOutcome, 1)}
	q := &fwdQueue{pending: []*fwdCall{dead, live}}
	batch := f.takeLocked(q)
	if len(batch) != 1 || batch[0] != live {
		t.Fatalf("batch = %d commands, want only the live one", len(batch))
	}
	select {
	case o := <-dead.done:
		if o.err == nil || errors.Is(o.err, region.ErrIndeterminate) || !errors.Is(o.err, region.ErrNoLeader) {
			t.Errorf("dropped command answered %v; want a definite 503 (not sent)", o.err)
		}
	default:
		t.Error("the dropped command's caller got no answer")
	}
}

// TestServeBatch: the leader's side applies every command concurrently
// and answers each in order, a refusal with its code; a body cut inside a
// command is refused before anything is applied.
func TestServeBatch(t *testing.T) {
	var body []byte
	for _, c := range []string{"ok-1", "refuse", "ok-2"} {
		body = binary.AppendUvarint(body, uint64(len(c)))
		body = append(body, c...)
	}
	var applied atomic.Int64
	apply := func(_ context.Context, cmd []byte) (*codec.Result, error) {
		applied.Add(1)
		if string(cmd) == "refuse" {
			return nil, fmt.Errorf("moved: %w", region.ErrNotLeader)
		}
		return &codec.Result{Key: string(cmd)}, nil
	}
	out, err := ServeBatch(context.Background(), body, testCodes, apply)
	if err != nil {
		t.Fatal(err)
	}
	f := testForwarder(t)
	outs := make([]fwdOutcome, 3)
	br := bufio.NewReader(bytes.NewReader(out))
	for i := range outs {
		if err := f.readBatchAnswer(br, "leader", &outs[i]); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
	}
	if outs[0].res.Key != "ok-1" || outs[2].res.Key != "ok-2" || !errors.Is(outs[1].err, region.ErrNotLeader) {
		t.Errorf("answers %+v", outs)
	}
	applied.Store(0)
	if _, err := ServeBatch(context.Background(), body[:len(body)-2], testCodes, apply); err == nil || applied.Load() != 0 {
		t.Errorf("a cut batch: %v, %d applied; want it refused before anything is applied", err, applied.Load())
	}
}
