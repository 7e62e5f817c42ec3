package codec

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kvnode/kvnode/region"
)

// Result format versions: the first byte of an encoded Result. Results
// only travel between nodes (never to disk); version 2 adds Version. This
// build decodes both, so a node can answer an older peer during an upgrade.
const (
	resultV1      = 1
	resultVersion = 2
)

// Result is what the state machine's Apply returns (as *Result) for every
// LogCommand entry.
type Result struct {
	Key string // OpPutIfAbsent: the key that was written or found (generated when the command had none)
	// Version is OpSetMeta's new version on success, the current one on a
	// version conflict; for an OpBucket release, the log index it was
	// applied at (the adopt's FromIndex).
	Version uint64
	// Batch holds one result per sub-command of an OpBatch. Batches are
	// formed and applied on the leader and never forwarded, so EncodeResult
	// does not carry it.
	Batch []*Result
	Err   error // nil, or a region sentinel error the command was refused with (possibly *region.ConflictError)
}

// Sentinel codes on the wire. They are part of the result format: append
// new ones, never renumber. Code 0 means the error matched no sentinel.
const (
	codeNone byte = iota
	codeRegionNotFound
	codeRegionExists
	codeKeyNotFound
	codeKeyAbsent
	codeKeyExists
	codeCASMismatch
	codeNotSupported
	codeInvalid
	codeNotLeader
	codeNoLeader
	codeIndeterminate
	codeVersionConflict
	codeWrongGroup
	codeCount // one past the last code
)

// sentinel returns the region error a code stands for, nil for codeNone and
// codes this build does not know.
func sentinel(code byte) error {
	switch code {
	case codeRegionNotFound:
		return region.ErrRegionNotFound
	case codeRegionExists:
		return region.ErrRegionExists
	case codeKeyNotFound:
		return region.ErrKeyNotFound
	case codeKeyAbsent:
		return region.ErrKeyAbsent
	case codeKeyExists:
		return region.ErrKeyExists
	case codeCASMismatch:
		return region.ErrCASMismatch
	case codeNotSupported:
		return region.ErrNotSupported
	case codeInvalid:
		return region.ErrInvalid
	case codeNotLeader:
		return region.ErrNotLeader
	case codeNoLeader:
		return region.ErrNoLeader
	case codeIndeterminate:
		return region.ErrIndeterminate
	case codeVersionConflict:
		return region.ErrVersionConflict
	case codeWrongGroup:
		return region.ErrWrongGroup
	}
	return nil
}

// sentinelCode returns the code of the first sentinel err matches.
func sentinelCode(err error) byte {
	for code := codeNone + 1; code < codeCount; code++ {
		if errors.Is(err, sentinel(code)) {
			return code
		}
	}
	return codeNone
}

// EncodeResult appends the encoding of r to dst and returns it. Layout:
//
//	version 2 | key | uvarint version | 0 (no error)
//	version 2 | key | uvarint version | 1 | sentinel code | message | 0
//	version 2 | key | uvarint version | 1 | sentinel code | message | 1 | conflict code | conflict key | current value
//
// (Version 1 is the same without the uvarint version.)
//
// Version, flags and codes are one byte each; strings and byte slices are
// uvarint length-prefixed. An error travels as what callers inspect: its
// message, the code of the region sentinel it wraps and, for a
// *region.ConflictError anywhere in its chain, that conflict's sentinel
// code, key and current value.
func EncodeResult(dst []byte, r *Result) []byte {
	if r == nil {
		r = &Result{}
	}
	dst = append(dst, resultVersion)
	dst = appendString(dst, r.Key)
	dst = binary.AppendUvarint(dst, r.Version)
	if r.Err == nil {
		return append(dst, 0)
	}
	dst = append(dst, 1, sentinelCode(r.Err))
	dst = appendString(dst, r.Err.Error())
	var ce *region.ConflictError
	if !errors.As(r.Err, &ce) {
		return append(dst, 0)
	}
	dst = append(dst, 1, sentinelCode(ce.Err))
	dst = appendString(dst, ce.Key)
	return appendBytes(dst, ce.Current)
}

// DecodeResult parses an encoded Result. The rebuilt error has the original
// message, matches the same region sentinel with errors.Is and, when the
// original held a conflict, yields a *region.ConflictError with the same Err,
// Key and Current through errors.As (it is that ConflictError itself when the
// message is exactly the conflict's). A sentinel code this build does not
// know (a newer peer) still yields an error with the original message.
func DecodeResult(b []byte) (*Result, error) {
	d := decoder{buf: b}
	v := d.u8("format version")
	if d.err == nil && v != resultV1 && v != resultVersion {
		return nil, fmt.Errorf("fsm: decode result: format version %d is not supported (this build reads versions %d and %d)", v, resultV1, resultVersion)
	}
	r := &Result{Key: d.str("key")}
	if v == resultVersion {
		r.Version = d.uvarint("version", "")
	}
	switch flag := d.u8("error flag"); flag {
	case 0:
	case 1:
		r.Err = decodeError(&d)
	default:
		d.fail("error flag %d is neither 0 nor 1", flag)
	}
	if err := d.finish(); err != nil {
		return nil, fmt.Errorf("fsm: decode result: %w", err)
	}
	return r, nil
}

// decodeError reads the error part of a Result (after its flag).
func decodeError(d *decoder) error {
	code := d.u8("error code")
	msg := d.str("error message")
	cause := sentinel(code)
	switch flag := d.u8("conflict flag"); flag {
	case 0:
	case 1:
		ce := &region.ConflictError{Err: sentinel(d.u8("conflict code"))}
		ce.Key = d.str("conflict key")
		ce.Current = d.raw("current value")
		if ce.Err != nil && ce.Error() == msg {
			return ce
		}
		cause = ce
	default:
		d.fail("conflict flag %d is neither 0 nor 1", flag)
	}
	return &remoteError{msg: msg, cause: cause}
}

// remoteError is an error rebuilt from another node's Result: the original
// message, unwrapping to the region sentinel or conflict it carried.
type remoteError struct {
	msg   string
	cause error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.cause }
