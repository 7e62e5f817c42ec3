package partition

import (
	"cmp"
	"slices"
)

// Plan returns the table that placement wants for members (the member
// universe, in any order; duplicates ignored). It is deterministic — the
// same inputs give the same table whatever the order of members — and moves
// as little as possible:
//
//  1. A group not yet bootstrapped keeps its members exactly (a bootstrap
//     may be in flight; changing them could make two nodes bootstrap),
//     unless it has none yet or its bootstrapper left the universe: then it
//     is assigned like a new group and its first member becomes the
//     bootstrapper.
//  2. Every other group drops members outside the universe and is filled up
//     to min(RF, members) replicas with the members hosting fewest groups.
//  3. Replica counts are balanced: while some member hosts two groups more
//     than another, one replica moves from the first to the second.
//  4. Preferred leaders (Members[0]) are balanced the same way, by shifting
//     leadership along chains of groups (an augmenting path), which reaches
//     the most even spread the replica sets allow; current leaders are kept
//     whenever they already are even.
//
// An empty universe returns the table unchanged.
func Plan(t Table, members []string) Table {
	universe := slices.Clone(members)
	slices.Sort(universe)
	universe = slices.Compact(universe)
	out := t.Clone()
	if len(universe) == 0 || len(out.Groups) == 0 {
		return out
	}
	p := &planner{t: &out, universe: universe, in: map[string]bool{}}
	for _, m := range universe {
		p.in[m] = true
	}
	p.classify()
	p.fill()
	p.balanceReplicas()
	p.balanceLeaders()
	for i, g := range out.Groups {
		if p.fresh[i] && len(g.Members) > 0 {
			out.Groups[i].Bootstrapper = g.Members[0]
		}
	}
	return out
}

type planner struct {
	t        *Table
	universe []string // sorted
	in       map[string]bool
	fixed    []bool // group keeps its members (unbootstrapped, bootstrap may be in flight)
	fresh    []bool // unbootstrapped group (re)assigned by this plan
}

// classify decides which groups may change (rule 1) and drops members that
// left the universe from the others (rule 2).
func (p *planner) classify() {
	n := len(p.t.Groups)
	p.fixed = make([]bool, n)
	p.fresh = make([]bool, n)
	for i := range p.t.Groups {
		g := &p.t.Groups[i]
		if !g.Bootstrapped {
			if len(g.Members) > 0 && p.in[g.Bootstrapper] {
				p.fixed[i] = true
				continue
			}
			p.fresh[i] = true
			g.Members = []string{}
			g.Bootstrapper = ""
			continue
		}
		g.Members = slices.DeleteFunc(g.Members, func(m string) bool { return !p.in[m] })
	}
}

// counts returns how many groups each member of the universe hosts.
func (p *planner) counts() map[string]int {
	c := make(map[string]int, len(p.universe))
	for _, m := range p.universe {
		c[m] = 0
	}
	for _, g := range p.t.Groups {
		for _, m := range g.Members {
			if _, ok := c[m]; ok {
				c[m]++
			}
		}
	}
	return c
}

// fill adds replicas to every changeable group until it has the target
// count, always choosing the member hosting fewest groups (then by name).
func (p *planner) fill() {
	target := min(p.t.RF, len(p.universe))
	c := p.counts()
	for i := range p.t.Groups {
		if p.fixed[i] {
			continue
		}
		g := &p.t.Groups[i]
		for len(g.Members) < target {
			best := ""
			for _, m := range p.universe {
				if slices.Contains(g.Members, m) {
					continue
				}
				if best == "" || c[m] < c[best] {
					best = m
				}
			}
			g.Members = append(g.Members, best)
			c[best]++
		}
		// A smaller RF than before (never today, RF is fixed) or a shrunk
		// universe could leave more replicas than wanted: trim the most loaded.
		for len(g.Members) > target {
			worst := 0
			for j, m := range g.Members {
				if c[m] > c[g.Members[worst]] || (c[m] == c[g.Members[worst]] && m > g.Members[worst]) {
					worst = j
				}
			}
			c[g.Members[worst]]--
			g.Members = slices.Delete(g.Members, worst, worst+1)
		}
	}
}

// balanceReplicas moves replicas from the most to the least loaded members
// until no two members' counts differ by more than one, or no movable group
// allows a move.
func (p *planner) balanceReplicas() {
	for {
		c := p.counts()
		byLoad := slices.Clone(p.universe)
		slices.SortStableFunc(byLoad, func(a, b string) int { return cmp.Compare(c[b], c[a]) })
		moved := false
	search:
		for _, hi := range byLoad {
			for j := len(byLoad) - 1; j >= 0; j-- {
				lo := byLoad[j]
				if c[hi]-c[lo] < 2 {
					break
				}
				for i := range p.t.Groups {
					g := &p.t.Groups[i]
					if p.fixed[i] || !slices.Contains(g.Members, hi) || slices.Contains(g.Members, lo) {
						continue
					}
					g.Members[slices.Index(g.Members, hi)] = lo
					moved = true
					break search
				}
			}
		}
		if !moved {
			return
		}
	}
}

// balanceLeaders evens out how many groups each member is preferred leader
// of. A member with at least two more than another hands leadership along a
// chain of movable groups (it leads the first; each next leader is a member
// of that group and leads the next one) to a member with fewer; the search
// is breadth-first so chains are shortest. Each shift lowers the sum of
// squared counts, so the loop ends, at a spread no chain can improve.
func (p *planner) balanceLeaders() {
	for {
		lead := make(map[string]int, len(p.universe))
		for _, m := range p.universe {
			lead[m] = 0
		}
		for _, g := range p.t.Groups {
			if len(g.Members) > 0 {
				lead[g.Members[0]]++
			}
		}
		byLead := slices.Clone(p.universe)
		slices.SortStableFunc(byLead, func(a, b string) int { return cmp.Compare(lead[b], lead[a]) })
		shifted := false
		for _, src := range byLead {
			if path := p.leaderPath(src, lead); path != nil {
				for _, step := range path {
					p.promote(step.group, step.to)
				}
				shifted = true
				break
			}
		}
		if !shifted {
			return
		}
	}
}

type leaderStep struct {
	group int
	to    string
}

// leaderPath finds the shortest chain from src to a member leading at most
// lead[src]-2 groups, or nil.
func (p *planner) leaderPath(src string, lead map[string]int) []leaderStep {
	type visit struct {
		prev string
		step leaderStep
	}
	seen := map[string]visit{src: {}}
	queue := []string{src}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for i, g := range p.t.Groups {
			if p.fixed[i] || len(g.Members) < 2 || g.Members[0] != cur {
				continue
			}
			for _, m := range g.Members[1:] {
				if _, ok := seen[m]; ok {
					continue
				}
				seen[m] = visit{prev: cur, step: leaderStep{group: i, to: m}}
				if lead[m] <= lead[src]-2 {
					var path []leaderStep
					for at := m; at != src; at = seen[at].prev {
						path = append(path, seen[at].step)
					}
					slices.Reverse(path)
					return path
				}
				queue = append(queue, m)
			}
		}
	}
	return nil
}

// promote makes member the preferred leader of group i, keeping the order
// of the others.
func (p *planner) promote(i int, member string) {
	g := &p.t.Groups[i]
	j := slices.Index(g.Members, member)
	if j <= 0 {
		return
	}
	copy(g.Members[1:j+1], g.Members[:j])
	g.Members[0] = member
}

// Change is one difference between two tables, for logs and tests.
type Change struct {
	Group  uint64
	Kind   string // "add", "remove", "leader"
	Member string
}

// Diff lists what changes from one table to the other, by group, then kind
// (remove, add, leader), then member.
func Diff(from, to Table) []Change {
	var out []Change
	for i := 0; i < max(len(from.Groups), len(to.Groups)); i++ {
		var a, b Group
		if i < len(from.Groups) {
			a = from.Groups[i]
		}
		if i < len(to.Groups) {
			b = to.Groups[i]
		}
		id := uint64(i + 1)
		var removed, added []string
		for _, m := range a.Members {
			if !slices.Contains(b.Members, m) {
				removed = append(removed, m)
			}
		}
		for _, m := range b.Members {
			if !slices.Contains(a.Members, m) {
				added = append(added, m)
			}
		}
		slices.Sort(removed)
		slices.Sort(added)
		for _, m := range removed {
			out = append(out, Change{Group: id, Kind: "remove", Member: m})
		}
		for _, m := range added {
			out = append(out, Change{Group: id, Kind: "add", Member: m})
		}
		if len(b.Members) > 0 && (len(a.Members) == 0 || a.Members[0] != b.Members[0]) {
			out = append(out, Change{Group: id, Kind: "leader", Member: b.Members[0]})
		}
	}
	return out
}
