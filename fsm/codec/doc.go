// Package codec is the language of a Raft group's log: the commands a group
// replicates (Command, Op) and the results they produce (Result), and the
// binary encodings of both.
//
// It owns:
//
//   - the command encoding (Command.Encode, DecodeCommand, CheckCommand): a
//     versioned envelope that is stored in Raft logs and therefore an
//     on-disk format forever, pinned by the golden files in testdata/golden
//     (go test -update rewrites them, which is only right for a new file).
//     It is canonical: decoding is strict (unknown versions and ops,
//     truncation, trailing bytes, counts larger than the input can hold and
//     non-minimal varints are errors, and a hostile count never causes a
//     large allocation), and whatever decodes re-encodes to exactly the same
//     bytes, which FuzzDecodeCommand checks;
//   - the numbering of the operations (op.go): part of that format, never
//     renumbered or reused;
//   - the result encoding (EncodeResult, DecodeResult) a leader answers a
//     forwarded write with, which carries a refusal as the region sentinel
//     it wraps, so the caller's errors.Is and errors.As see what the
//     leader's did.
//
// It is a package of its own because its formats outlive every build and
// every caller: the store encodes and checks commands and decodes results,
// package fsm decodes and applies them, and neither may change a byte of
// them. What a well-formed command means (which commands are refused, and
// how one changes the state) is fsm's: codec checks structure, never sense.
// DESIGN.md gives both layouts byte by byte.
//
// codec must not import fsm, store, oql, index, cluster, rest, raft,
// memberlist or Echo: of kvnode it knows only region's vocabulary
// (imports_test.go checks).
package codec
