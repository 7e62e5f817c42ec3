package partition

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Group is one partition group's placement.
type Group struct {
	ID uint64 `json:"id"` // 1..P
	// Members host the group's replicas; Members[0] is the preferred leader.
	Members []string `json:"members"`
	// Bootstrapper is the one member allowed to bootstrap the group's Raft
	// instance, and only while Bootstrapped is false.
	Bootstrapper string `json:"bootstrapper"`
	// Bootstrapped is set once the bootstrapper has bootstrapped the group.
	Bootstrapped bool `json:"bootstrapped"`
}

// Table is the partition table: every partition group and where it lives,
// and which group owns each bucket. It is stored in group 0 as JSON.
type Table struct {
	RF     int     `json:"replicationFactor"`
	Groups []Group `json:"groups"` // Groups[i].ID == i+1; len(Groups) is P
	// Owners, when set, is the group that owns each bucket: Owners[b] for
	// bucket b, one of 1..P. Nil is the placement every table starts with,
	// 1 + b mod P (GroupOf), which a table keeps until a bucket first
	// moves: members of releases before bucket ownership read such a
	// table (they refuse fields they do not know).
	Owners []uint64 `json:"owners,omitempty"`
	// Moves are the buckets moving between groups now (the store's mover
	// drives them; see Move).
	Moves []Move `json:"moves,omitempty"`
}

// Move is a bucket moving from group From, its owner until the move ends,
// to group To. ID names the move in the groups' logs (their steps of
// another move are refused). Switching is set just before the source
// releases the bucket and the target adopts it: until the move ends, which
// of the two serves the bucket is not known from the table, so a read of
// every group begun then goes again once it has ended.
type Move struct {
	Bucket    int    `json:"bucket"`
	From      uint64 `json:"from"`
	To        uint64 `json:"to"`
	ID        uint64 `json:"id"`
	Switching bool   `json:"switching,omitempty"`
}

// Switching reports whether some bucket is in the switch of its move.
func (t Table) Switching() bool {
	return slices.ContainsFunc(t.Moves, func(m Move) bool { return m.Switching })
}

// Moving is the move of bucket b under way, if any.
func (t Table) Moving(b int) (Move, bool) {
	for _, m := range t.Moves {
		if m.Bucket == b {
			return m, true
		}
	}
	return Move{}, false
}

// NewTable returns a table of groups groups (1..Buckets) and replication
// factor rf (≥ 1), with no member assigned yet.
func NewTable(groups, rf int) (Table, error) {
	if groups < 1 || groups > Buckets {
		return Table{}, fmt.Errorf("partition groups %d: must be between 1 and %d", groups, Buckets)
	}
	if rf < 1 {
		return Table{}, fmt.Errorf("replication factor %d: must be at least 1", rf)
	}
	t := Table{RF: rf, Groups: make([]Group, groups)}
	for i := range t.Groups {
		t.Groups[i] = Group{ID: uint64(i + 1), Members: []string{}}
	}
	return t, nil
}

// P is the number of partition groups.
func (t Table) P() int { return len(t.Groups) }

// Validate checks the table's structure.
func (t Table) Validate() error {
	if t.RF < 1 {
		return fmt.Errorf("partition table: replication factor %d is below 1", t.RF)
	}
	if len(t.Groups) < 1 || len(t.Groups) > Buckets {
		return fmt.Errorf("partition table: %d groups, want 1 to %d", len(t.Groups), Buckets)
	}
	for i, g := range t.Groups {
		if g.ID != uint64(i+1) {
			return fmt.Errorf("partition table: group %d at position %d, want id %d", g.ID, i, i+1)
		}
		seen := map[string]bool{}
		for _, m := range g.Members {
			if m == "" {
				return fmt.Errorf("partition table: group %d has an empty member name", g.ID)
			}
			if seen[m] {
				return fmt.Errorf("partition table: group %d lists %q twice", g.ID, m)
			}
			seen[m] = true
		}
		if g.Bootstrapped && g.Bootstrapper == "" {
			return fmt.Errorf("partition table: group %d is bootstrapped but names no bootstrapper", g.ID)
		}
		if g.Bootstrapper != "" && !g.Bootstrapped && !seen[g.Bootstrapper] {
			return fmt.Errorf("partition table: group %d: bootstrapper %q is not a member", g.ID, g.Bootstrapper)
		}
	}
	if t.Owners != nil {
		if len(t.Owners) != Buckets {
			return fmt.Errorf("partition table: %d bucket owners, want %d", len(t.Owners), Buckets)
		}
		for b, gid := range t.Owners {
			if gid < 1 || gid > uint64(len(t.Groups)) {
				return fmt.Errorf("partition table: bucket %d is owned by group %d, not one of 1..%d", b, gid, len(t.Groups))
			}
		}
	}
	moving := map[int]bool{}
	for _, m := range t.Moves {
		switch {
		case m.Bucket < 0 || m.Bucket >= Buckets || moving[m.Bucket]:
			return fmt.Errorf("partition table: a move of bucket %d (a bucket moves once at a time)", m.Bucket)
		case m.From == m.To || m.To < 1 || m.To > uint64(len(t.Groups)) || m.From != t.Owner(m.Bucket) || m.ID == 0:
			return fmt.Errorf("partition table: the move of bucket %d from group %d to %d (id %x) does not fit the table", m.Bucket, m.From, m.To, m.ID)
		}
		moving[m.Bucket] = true
	}
	return nil
}

// Owner is the group that owns bucket b.
func (t Table) Owner(b int) uint64 {
	if t.Owners != nil {
		return t.Owners[b]
	}
	return GroupOf(b, len(t.Groups))
}

// GroupFor is the group that owns key's bucket.
func (t Table) GroupFor(key string) uint64 { return t.Owner(Bucket(key)) }

// BucketsOf lists, ascending, the buckets group id owns.
func (t Table) BucketsOf(id uint64) []int {
	var out []int
	for b := 0; b < Buckets; b++ {
		if t.Owner(b) == id {
			out = append(out, b)
		}
	}
	return out
}

// Clone returns a deep copy.
func (t Table) Clone() Table {
	out := Table{RF: t.RF, Groups: make([]Group, len(t.Groups)), Owners: slices.Clone(t.Owners), Moves: slices.Clone(t.Moves)}
	for i, g := range t.Groups {
		g.Members = append([]string{}, g.Members...)
		out.Groups[i] = g
	}
	return out
}

// Group returns group id.
func (t Table) Group(id uint64) (Group, bool) {
	if id < 1 || id > uint64(len(t.Groups)) {
		return Group{}, false
	}
	return t.Groups[id-1], true
}

// HostedBy lists, ascending, the groups whose members include member.
func (t Table) HostedBy(member string) []uint64 {
	var out []uint64
	for _, g := range t.Groups {
		if slices.Contains(g.Members, member) {
			out = append(out, g.ID)
		}
	}
	return out
}

// Equal reports whether two tables are the same.
func (t Table) Equal(o Table) bool {
	if t.RF != o.RF || len(t.Groups) != len(o.Groups) || !slices.Equal(t.Owners, o.Owners) || !slices.Equal(t.Moves, o.Moves) {
		return false
	}
	for i, g := range t.Groups {
		h := o.Groups[i]
		if g.ID != h.ID || g.Bootstrapper != h.Bootstrapper || g.Bootstrapped != h.Bootstrapped || !slices.Equal(g.Members, h.Members) {
			return false
		}
	}
	return true
}

// Encode returns the table as JSON.
func Encode(t Table) ([]byte, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(t)
}

// Decode parses and validates a table; unknown fields are an error.
func Decode(b []byte) (Table, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var t Table
	if err := dec.Decode(&t); err != nil {
		return Table{}, fmt.Errorf("decode partition table: %w", err)
	}
	if dec.More() {
		return Table{}, errors.New("decode partition table: trailing data")
	}
	for i := range t.Groups {
		if t.Groups[i].Members == nil {
			t.Groups[i].Members = []string{}
		}
	}
	return t, t.Validate()
}
