// Package buckets is a partition group's bucket ownership, as its state
// machine decides it (fsm's DESIGN.md, "Buckets"): which of the 113
// buckets the group serves, and how a bucket's state moves when the bucket
// moves between groups. It is pure: package fsm applies the steps and
// keeps the entries; this package says what each step is allowed to do.
//
// A group starts implicit (no Set): it serves every key it is sent. Init
// makes it explicit, and then each bucket is:
//
//   - Absent: not this group's; every operation on it is refused;
//   - Owned: this group's; everything is served;
//   - Sealed: moving out; reads are served (nothing can change it: no
//     group takes its writes), writes refused;
//   - Importing: moving in; imports are taken, nothing is served, and its
//     entries are left out of every read.
//
// Every step but Init names the move (the mover's random ID): a step of
// another move is refused, so a late step of an abandoned move changes
// nothing. A step already taken is a no-op, so the mover may retry.
//
// buckets imports nothing of kvnode but codec, region and snapio, and
// must not import fsm, store, rest, raft, memberlist or Echo.
package buckets

import (
	"fmt"
	"slices"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/snapio"
	"github.com/kvnode/kvnode/region"
)

// State is a bucket's state in an explicit group.
type State uint8

// The states; their values are written in snapshots.
const (
	Absent State = iota
	Owned
	Sealed
	Importing
)

func (st State) String() string {
	if st > Importing {
		return fmt.Sprintf("State(%d)", uint8(st))
	}
	return [...]string{"absent", "owned", "sealed", "importing"}[st]
}

// Set is an explicit group's buckets: each one's state, and the move that
// last changed it.
type Set struct {
	state [region.Buckets]State
	move  [region.Buckets]uint64
}

// Init is the Set of a group that owns owned and no other bucket. Each
// must be one of 0..Buckets-1, once.
func Init(owned []uint64) (*Set, error) {
	var s Set
	for _, b := range owned {
		if b >= region.Buckets || s.state[b] == Owned {
			return nil, fmt.Errorf("%w: owned buckets %v: each must be one of 0..%d, once", region.ErrInvalid, owned, region.Buckets-1)
		}
		s.state[b] = Owned
	}
	return &s, nil
}

// Reinit decides a second init of s with owned: a no-op when it owns just
// those, or when a move has changed it since (a late init); else refused.
func (s *Set) Reinit(owned []uint64) error {
	again, err := Init(owned)
	if err != nil {
		return err
	}
	if again.state != s.state && !slices.ContainsFunc(s.move[:], func(m uint64) bool { return m != 0 }) {
		return fmt.Errorf("%w: this group's buckets are explicit already, and others", region.ErrInvalid)
	}
	return nil
}

// Of is bucket b's state.
func (s *Set) Of(b int) State { return s.state[b] }

// Serves reports whether reads of key's bucket are served.
func (s *Set) Serves(key string) bool {
	st := s.state[region.Bucket(key)]
	return st == Owned || st == Sealed
}

// Owns reports whether writes of key's bucket are taken.
func (s *Set) Owns(key string) bool { return s.state[region.Bucket(key)] == Owned }

// OwnsAny reports whether the group owns some bucket (a generated key can
// be found).
func (s *Set) OwnsAny() bool { return slices.Contains(s.state[:], Owned) }

// Hidden is what reads of whole regions leave out: nil when nothing (no
// bucket is being imported), else a test of a key over a copy of the
// states, safe to use without the state machine's lock.
func (s *Set) Hidden() func(key string) bool {
	if !slices.Contains(s.state[:], Importing) {
		return nil
	}
	states := s.state
	return func(key string) bool { return states[region.Bucket(key)] == Importing }
}

// Importing reports whether bucket b takes imports of move.
func (s *Set) Importing(b uint64, move uint64) bool {
	return b < region.Buckets && s.state[b] == Importing && s.move[b] == move
}

// Step applies action to bucket b for move. drop says the bucket's
// entries must go (an abandoned import, a release, or what an earlier
// abandoned import left before a new expect). A step the bucket's state
// does not allow is refused with region.ErrInvalid and changes nothing.
func (s *Set) Step(action codec.BucketAction, b uint64, move uint64) (drop bool, err error) {
	if b >= region.Buckets {
		return false, fmt.Errorf("%w: bucket %d: there are %d", region.ErrInvalid, b, region.Buckets)
	}
	st, mv := &s.state[b], &s.move[b]
	ok := true
	switch action {
	case codec.BucketSeal:
		switch {
		case *st == Owned && *mv == move:
			// Unsealed by this move already: it was abandoned (a former
			// control leader's mover, still running, must not seal it
			// again behind the new leader's back).
			ok = false
		case *st == Owned:
			*st, *mv = Sealed, move
		case *st != Sealed || *mv != move:
			ok = false
		}
	case codec.BucketUnseal:
		switch {
		case *st == Sealed && *mv == move:
			*st = Owned
		case *st == Owned:
			*mv = move // remembered: a late seal of this move is refused
		default:
			ok = false
		}
	case codec.BucketExpect:
		switch {
		case *st == Absent || (*st == Importing && *mv != move):
			drop, *st, *mv = true, Importing, move
		case *st != Importing:
			ok = false
		}
	case codec.BucketAdopt:
		switch {
		case *st == Importing && *mv == move:
			*st = Owned
		case *st != Owned || *mv != move:
			ok = false
		}
	case codec.BucketAbandon:
		switch {
		case *st == Importing && *mv == move:
			drop, *st = true, Absent
		case *st != Absent && *st != Importing:
			ok = false
		}
	case codec.BucketRelease:
		switch {
		case *st == Sealed && *mv == move:
			drop, *st = true, Absent
		case *st != Absent || *mv != move:
			ok = false
		}
	default:
		ok = false
	}
	if !ok {
		return false, fmt.Errorf("%w: bucket %d: %s by move %x: it is %s by move %x", region.ErrInvalid, b, action, move, *st, *mv)
	}
	return drop, nil
}

// States lists each bucket's state by name.
func (s *Set) States() []string {
	out := make([]string, len(s.state))
	for b, st := range s.state {
		out[b] = st.String()
	}
	return out
}

// Write writes s's snapshot record body: the bucket count, then each
// bucket's state and move.
func (s *Set) Write(w *snapio.Writer) {
	w.Uvarint(uint64(len(s.state)))
	for b, st := range s.state {
		w.Byte(byte(st))
		w.Uvarint(s.move[b])
	}
}

// Read reads a record Write wrote, strictly.
func Read(r *snapio.Reader) (*Set, error) {
	n, err := r.Uvarint("bucket count")
	if err != nil {
		return nil, err
	}
	var s Set
	if n != uint64(len(s.state)) {
		return nil, fmt.Errorf("%d buckets, want %d", n, len(s.state))
	}
	for b := range s.state {
		st, err := r.ReadByte()
		if err != nil {
			return nil, fmt.Errorf("bucket %d: %w", b, err)
		}
		if State(st) > Importing {
			return nil, fmt.Errorf("bucket %d: unknown state %d", b, st)
		}
		s.state[b] = State(st)
		if s.move[b], err = r.Uvarint("bucket move"); err != nil {
			return nil, err
		}
	}
	return &s, nil
}
