package oql

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Partial is what one share of the data contributes to a SELECT: its rows
// (with their sort keys), or its groups with their aggregate states. A
// query over a partitioned region computes one Partial on a replica of each
// partition group and merges them on the coordinator; a query over data
// that is all local computes one.
type Partial struct {
	Rows   []Row
	Groups []Group
}

// Row is a projected row and the values it sorts by.
type Row struct {
	Value Value
	Keys  []Value
}

// Group is the state of one GROUP BY group (or of the whole input of an
// ungrouped aggregate query).
type Group struct {
	Keys   []Value
	States []AggState
}

// AggState is an aggregate's running state; states of the same group from
// different shares merge.
type AggState struct {
	Count    int64
	Sum      float64
	Best     Value            // MIN / MAX so far; nil before any value
	Distinct map[string]Value // the DISTINCT forms: canonical key → value
}

// partial runs the SELECT over the data (the first iterator over shard when
// set) and returns its share. maxRows bounds what it keeps (0: no bound).
func (cs *compiledSelect) partial(e *env, shard Source, maxRows int) (*Partial, error) {
	limit, err := cs.limitValue(e)
	if err != nil {
		return nil, err
	}
	if cs.aggregate {
		return cs.partialGroups(e, shard, limit, maxRows)
	}
	p := &Partial{}
	if limit == 0 {
		return p, nil
	}
	var seen map[string]bool
	if cs.stmt.distinct {
		seen = map[string]bool{}
	}
	err = cs.bindings(e, shard, func() (bool, error) {
		out, err := cs.output(e)
		if err != nil {
			return false, err
		}
		if seen != nil {
			k := canonicalKey(out)
			if seen[k] {
				return true, nil
			}
			seen[k] = true
		}
		r := Row{Value: out}
		if len(cs.order) > 0 {
			r.Keys = make([]Value, len(cs.order))
			for i, o := range cs.order {
				if o.field >= 0 {
					r.Keys[i] = cs.field(out, o.field)
					continue
				}
				if r.Keys[i], err = o.fn(e); err != nil {
					return false, err
				}
			}
		}
		p.Rows = append(p.Rows, r)
		if limit > 0 {
			if len(cs.order) == 0 {
				return len(p.Rows) < limit, nil
			}
			// Keep the best `limit` rows: sort and cut when twice as many.
			if len(p.Rows) >= 2*limit+64 {
				cs.sortRows(p.Rows)
				p.Rows = p.Rows[:limit]
			}
		}
		if maxRows > 0 && len(p.Rows) > maxRows {
			return false, fmt.Errorf("%w: more than %d rows", ErrTooManyRows, maxRows)
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if len(cs.order) > 0 && limit > 0 && len(p.Rows) > limit {
		cs.sortRows(p.Rows)
		p.Rows = p.Rows[:limit]
	}
	return p, nil
}

// partialGroups runs an aggregate or GROUP BY query over this share.
func (cs *compiledSelect) partialGroups(e *env, shard Source, limit, maxRows int) (*Partial, error) {
	p := &Partial{}
	grouped := len(cs.groupBy) > 0
	if !grouped && cs.sizeShortcut != "" {
		// COUNT(*) without WHERE is the region's size, whatever the LIMIT.
		src := e.src
		if shard != nil {
			src = shard
		}
		n, err := src.Size(e.ctx, cs.sizeShortcut)
		if err != nil {
			return nil, err
		}
		p.Groups = []Group{{States: []AggState{{Count: int64(n)}}}}
		return p, nil
	}
	index := map[string]int{}
	rows := 0
	err := cs.bindings(e, shard, func() (bool, error) {
		if !grouped && limit >= 0 && rows >= limit {
			return false, nil
		}
		rows++
		var keys []Value
		gk := ""
		if grouped {
			keys = make([]Value, len(cs.groupBy))
			for i, g := range cs.groupBy {
				v, err := g(e)
				if err != nil {
					return false, err
				}
				keys[i] = v
			}
			gk = canonicalKey(List(keys))
		}
		gi, ok := index[gk]
		if !ok {
			gi = len(p.Groups)
			index[gk] = gi
			p.Groups = append(p.Groups, Group{Keys: keys, States: make([]AggState, len(cs.aggs))})
			if maxRows > 0 && len(p.Groups) > maxRows {
				return false, fmt.Errorf("%w: more than %d groups", ErrTooManyRows, maxRows)
			}
		}
		g := &p.Groups[gi]
		for i, a := range cs.aggs {
			if a == nil {
				continue
			}
			var v Value
			if !a.star {
				var err error
				if v, err = a.arg(e); err != nil {
					return false, err
				}
			}
			if err := g.States[i].add(a, v); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// add folds one input value into the state.
func (s *AggState) add(a *aggSpec, v Value) error {
	if a.star {
		s.Count++
		return nil
	}
	switch v.(type) {
	case nil, undefinedValue:
		return nil // aggregates skip null and UNDEFINED
	}
	if (a.fn == "SUM" || a.fn == "AVG") && !isNumber(v) {
		return errorf("%s needs numbers, got %s", a.fn, typeName(v))
	}
	if a.distinct {
		if s.Distinct == nil {
			s.Distinct = map[string]Value{}
		}
		s.Distinct[canonicalKey(normalizeNumber(v))] = v
		return nil
	}
	switch a.fn {
	case "COUNT":
		s.Count++
	case "SUM", "AVG":
		s.Sum += toFloat(v)
		s.Count++
	case "MIN", "MAX":
		if s.Best == nil || better(a.fn, v, s.Best) {
			s.Best = v
		}
	}
	return nil
}

// normalizeNumber makes numerically equal numbers one DISTINCT value.
func normalizeNumber(v Value) Value {
	if isNumber(v) {
		f := toFloat(v)
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f)
		}
		return f
	}
	return v
}

// better reports whether v beats best for MIN or MAX; numbers compare
// numerically whatever their kind.
func better(fn string, v, best Value) bool {
	c := sortCompare(v, best)
	if fn == "MIN" {
		return c < 0
	}
	return c > 0
}

// mergeState folds another share's state of the same aggregate into s.
func (s *AggState) mergeState(a *aggSpec, o AggState) {
	s.Count += o.Count
	s.Sum += o.Sum
	for k, v := range o.Distinct {
		if s.Distinct == nil {
			s.Distinct = map[string]Value{}
		}
		s.Distinct[k] = v
	}
	if o.Best != nil && (s.Best == nil || better(a.fn, o.Best, s.Best)) {
		s.Best = o.Best
	}
}

// result is the aggregate's value (oql.md §8 result kinds): COUNT an int,
// SUM and AVG a double narrowed to an int when whole, else a float.
func (s *AggState) result(a *aggSpec) Value {
	if a.distinct {
		switch a.fn {
		case "COUNT":
			return int64(len(s.Distinct))
		case "SUM", "AVG":
			if len(s.Distinct) == 0 {
				return nil
			}
			sum := 0.0
			for _, v := range s.Distinct {
				sum += toFloat(v)
			}
			if a.fn == "AVG" {
				sum /= float64(len(s.Distinct))
			}
			return narrow(sum)
		}
	}
	switch a.fn {
	case "COUNT":
		return s.Count
	case "SUM":
		if s.Count == 0 {
			return nil
		}
		return narrow(s.Sum)
	case "AVG":
		if s.Count == 0 {
			return nil
		}
		return narrow(s.Sum / float64(s.Count))
	}
	return s.Best
}

// narrow turns a double result into an int when whole, else a float.
func narrow(f float64) Value {
	if f == math.Trunc(f) && math.Abs(f) <= math.MaxInt32 {
		return int64(f)
	}
	return float32(f)
}

// merge combines the shares into the final rows.
func (cs *compiledSelect) merge(e *env, parts []*Partial, maxRows int) ([]Value, error) {
	limit, err := cs.limitValue(e)
	if err != nil {
		return nil, err
	}
	if cs.aggregate {
		return cs.mergeGroups(parts, limit, maxRows)
	}
	var rows []Row
	for _, p := range parts {
		rows = append(rows, p.Rows...)
	}
	if cs.stmt.distinct && len(parts) > 1 {
		seen := map[string]bool{}
		kept := rows[:0]
		for _, r := range rows {
			k := canonicalKey(r.Value)
			if !seen[k] {
				seen[k] = true
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	if len(cs.order) > 0 {
		cs.sortRows(rows)
	}
	if limit >= 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	if maxRows > 0 && len(rows) > maxRows {
		return nil, fmt.Errorf("%w: more than %d rows", ErrTooManyRows, maxRows)
	}
	out := make([]Value, len(rows))
	for i, r := range rows {
		out[i] = r.Value
	}
	return out, nil
}

func (cs *compiledSelect) mergeGroups(parts []*Partial, limit, maxRows int) ([]Value, error) {
	var groups []Group
	index := map[string]int{}
	for _, p := range parts {
		for _, g := range p.Groups {
			k := canonicalKey(List(g.Keys))
			gi, ok := index[k]
			if !ok {
				index[k] = len(groups)
				states := make([]AggState, len(g.States))
				groups = append(groups, Group{Keys: g.Keys, States: states})
				gi = len(groups) - 1
			}
			for i, a := range cs.aggs {
				if a != nil {
					groups[gi].States[i].mergeState(a, g.States[i])
				}
			}
		}
	}
	grouped := len(cs.groupBy) > 0
	if !grouped {
		if len(groups) == 0 {
			if cs.countStarOnly {
				return []Value{int64(0)}, nil
			}
			return []Value{}, nil
		}
		if cs.countStarOnly && limit >= 0 && cs.sizeShortcut == "" && groups[0].States[0].Count > int64(limit) {
			// COUNT(*) ... LIMIT n counts at most n rows, over all shares.
			groups[0].States[0].Count = int64(limit)
		}
	}
	rows := make([]Row, 0, len(groups))
	for _, g := range groups {
		vals := make([]Value, len(cs.aggs))
		for i, a := range cs.aggs {
			if a != nil {
				vals[i] = g.States[i].result(a)
			} else {
				vals[i] = g.Keys[cs.groupOf[i]]
			}
		}
		var out Value = &Struct{Names: cs.names, Values: vals}
		if cs.shape == shapePlain {
			out = vals[0]
		}
		r := Row{Value: out}
		if len(cs.order) > 0 {
			r.Keys = make([]Value, len(cs.order))
			for i, o := range cs.order {
				r.Keys[i] = vals[o.field]
			}
		} else if grouped {
			// GROUP BY without ORDER BY: in group-key order, as DISTINCT +
			// ORDER BY on the group columns would give.
			r.Keys = g.Keys
		}
		rows = append(rows, r)
	}
	if len(cs.order) > 0 {
		cs.sortRows(rows)
	} else if grouped {
		slices.SortStableFunc(rows, func(a, b Row) int { return compareKeys(a.Keys, b.Keys, nil) })
	}
	if grouped && limit >= 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	if maxRows > 0 && len(rows) > maxRows {
		return nil, fmt.Errorf("%w: more than %d rows", ErrTooManyRows, maxRows)
	}
	out := make([]Value, len(rows))
	for i, r := range rows {
		out[i] = r.Value
	}
	return out, nil
}

// sortRows orders rows by their keys, ties broken by the rows themselves.
func (cs *compiledSelect) sortRows(rows []Row) {
	desc := make([]bool, len(cs.order))
	for i, o := range cs.order {
		desc[i] = o.desc
	}
	slices.SortFunc(rows, func(a, b Row) int {
		if c := compareKeys(a.Keys, b.Keys, desc); c != 0 {
			return c
		}
		return sortCompare(a.Value, b.Value)
	})
}

func compareKeys(a, b []Value, desc []bool) int {
	for i := range a {
		c := sortCompare(a[i], b[i])
		if desc != nil && desc[i] {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// sortCompare orders values for ORDER BY (oql.md §7): null first, then
// UNDEFINED, then values; numbers numerically across kinds, strings as
// Java does. Values of different kinds, which Geode cannot sort at all,
// order by kind so that a sort never fails.
func sortCompare(a, b Value) int {
	ra, rb := sortRank(a), sortRank(b)
	if ra != rb {
		return ra - rb
	}
	if ra < 2 {
		return 0
	}
	if c, ok := comparable3(a, b); ok {
		return c
	}
	if sa, ok := a.(*Struct); ok {
		if sb, ok := b.(*Struct); ok {
			for i := range min(len(sa.Values), len(sb.Values)) {
				if c := sortCompare(sa.Values[i], sb.Values[i]); c != 0 {
					return c
				}
			}
		}
	}
	return strings.Compare(canonicalKey(a), canonicalKey(b))
}

func sortRank(v Value) int {
	switch v.(type) {
	case nil:
		return 0
	case undefinedValue:
		return 1
	case bool:
		return 2
	case int64, float64, float32:
		return 3
	case string:
		return 4
	case Temporal:
		return 5
	}
	return 6
}
