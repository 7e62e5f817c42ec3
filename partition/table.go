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

// Table is the partition table: every partition group and where it lives.
// It is stored in group 0 as JSON.
type Table struct {
	RF     int     `json:"replicationFactor"`
	Groups []Group `json:"groups"` // Groups[i].ID == i+1; len(Groups) is P
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
	return nil
}

// Clone returns a deep copy.
func (t Table) Clone() Table {
	out := Table{RF: t.RF, Groups: make([]Group, len(t.Groups))}
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
	if t.RF != o.RF || len(t.Groups) != len(o.Groups) {
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
