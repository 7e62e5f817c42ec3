package region

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Sentinel errors. Packages wrap them with %w and context; package rest maps
// them to HTTP statuses with errors.Is in one table.
var (
	// ErrRegionNotFound: the named region does not exist.
	ErrRegionNotFound = errors.New("region not found")
	// ErrRegionExists: a region of that name already exists.
	ErrRegionExists = errors.New("region already exists")
	// ErrKeyNotFound: a key the operation needs is absent (GET, DELETE).
	ErrKeyNotFound = errors.New("key not found")
	// ErrKeyAbsent: REPLACE or CAS named a key that does not exist; Geode
	// answers these with 400, unlike a plain missing key (404).
	ErrKeyAbsent = errors.New("key not present in region")
	// ErrKeyExists: put-if-absent found the key; see ConflictError.
	ErrKeyExists = errors.New("key already exists")
	// ErrCASMismatch: the @old value of a CAS differs from the current value;
	// see ConflictError.
	ErrCASMismatch = errors.New("current value does not match @old")
	// ErrNotSupported: the operation does not apply to this kind of region
	// (clearing a partitioned region).
	ErrNotSupported = errors.New("operation not supported on this region type")
	// ErrVersionConflict: a compare-and-set of versioned metadata (the
	// partition table, later named queries) found another version.
	ErrVersionConflict = errors.New("version conflict")
	// ErrInvalid: the request is malformed (bad name, key, value or parameter).
	ErrInvalid = errors.New("invalid request")
	// ErrTooLarge: a command or an answer is larger than the node carries
	// between members (its frame limit, which follows --max-body-size).
	// Nothing was written.
	ErrTooLarge = errors.New("too large")
	// ErrNotLeader: this node is not the leader of the group. The store
	// retries on the leader; it reaches clients only when retries run out.
	ErrNotLeader = errors.New("not the leader")
	// ErrNoLeader: the group has no leader now; clients should retry.
	ErrNoLeader = errors.New("no leader for the group")
	// ErrIndeterminate: the write was handed to Raft but its outcome is
	// unknown (leadership lost or deadline passed while committing). It may or
	// may not have been applied.
	ErrIndeterminate = errors.New("outcome unknown: the write may or may not have been applied")
	// ErrWrongGroup: the key's bucket is not served by this partition
	// group now: it is moving to another group, or has moved. Nothing was
	// written; the request goes again to the owner the partition table
	// names once it changes (the store and package regions retry it).
	ErrWrongGroup = errors.New("the key's bucket is moving or has moved to another partition group")
	// ErrMemberNotFound: no member of that name is in the cluster's
	// control group (DELETE /management/v1/members/{name}).
	ErrMemberNotFound = errors.New("member not found")
	// ErrMemberAlive: the member to remove still answers gossip; removing
	// it would only make it join again.
	ErrMemberAlive = errors.New("member is alive")
	// ErrUpgradeInProgress: the request needs a replicated format that a
	// member of the cluster does not read yet (a rolling upgrade is under
	// way): nothing was written; it works once every member is upgraded.
	ErrUpgradeInProgress = errors.New("not every member reads the format this needs yet")
	// ErrShuttingDown: this node is closing; another member can serve the
	// request (a 503, like any ErrNoLeader).
	ErrShuttingDown = fmt.Errorf("%w: this node is shutting down", ErrNoLeader)
)

// ConflictError is returned when a put-if-absent finds an existing entry or a
// CAS finds a different current value. It carries the key and its current
// value, which the REST layer returns as the 409 body.
type ConflictError struct {
	// Err is ErrKeyExists or ErrCASMismatch.
	Err     error
	Key     string
	Current json.RawMessage
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("key %q: %v", e.Key, e.Err)
}

// Unwrap lets errors.Is match the sentinel.
func (e *ConflictError) Unwrap() error { return e.Err }
