package model

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Kind is the operation a client performed, one per REST form.
type Kind uint8

const (
	Get          Kind = iota // GET /kv/v1/{region}/{key}
	Put                      // PUT /kv/v1/{region}/{key}
	PutIfAbsent              // POST /kv/v1/{region}?key={key}
	Replace                  // PUT ...?op=REPLACE
	CAS                      // PUT ...?op=CAS {"@old","@new"}
	Delete                   // DELETE /kv/v1/{region}/{key}
	MultiGet                 // GET /kv/v1/{region}/k1,k2?ignoreMissingKey=true
	MultiPut                 // PUT /kv/v1/{region}/k1,k2 [v1,v2]
	MultiReplace             // PUT ...k1,k2?op=REPLACE [v1,v2]
	MultiCAS                 // PUT ...k1,k2?op=CAS [{"@old","@new"},...]
	MultiDelete              // DELETE /kv/v1/{region}/k1,k2
	Query                    // GET /kv/v1/queries/adhoc?q=SELECT e.key, e.value.v ... WHERE e.key IN SET(...)
)

var kindNames = [...]string{"get", "put", "put-if-absent", "replace", "cas", "delete",
	"multi-get", "multi-put", "multi-replace", "multi-cas", "multi-delete", "query"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Multi reports whether k names several keys (Input.Keys, not Input.Key).
func (k Kind) Multi() bool { return k >= MultiGet }

// single is the single-key operation k does to each of its keys.
func (k Kind) single() Kind {
	switch k {
	case MultiGet, Query:
		return Get
	case MultiPut:
		return Put
	case MultiReplace:
		return Replace
	case MultiCAS:
		return CAS
	case MultiDelete:
		return Delete
	}
	return k
}

// Absent is the value of a key that holds nothing. Written values are
// positive.
const Absent = 0

// Input is what a client asked.
type Input struct {
	Kind  Kind   `json:"kind"`
	Key   string `json:"key,omitempty"`
	Value int64  `json:"value,omitempty"` // Put, PutIfAbsent, Replace; CAS's new value
	Old   int64  `json:"old,omitempty"`   // CAS's expected value
	// Keys are a multi-key request's keys (distinct) or a query's IN SET;
	// Values the new values (MultiPut, MultiReplace, MultiCAS) and Olds the
	// expected ones (MultiCAS), element i for key i.
	Keys   []string `json:"keys,omitempty"`
	Values []int64  `json:"values,omitempty"`
	Olds   []int64  `json:"olds,omitempty"`
	// OneGroup: every key of the request is in one Raft group (always so
	// in a replicated region), so a multi-key write is one command, all or
	// nothing. Otherwise each group's part is all or nothing on its own.
	OneGroup bool `json:"oneGroup,omitempty"`
}

// keys is every key the operation names.
func (in Input) keys() []string {
	if in.Kind.Multi() {
		return in.Keys
	}
	return []string{in.Key}
}

// Output is what came back. Unknown means the client cannot tell whether
// the operation took effect; then nothing else is meaningful.
type Output struct {
	Status int   `json:"status,omitempty"`
	Value  int64 `json:"value,omitempty"` // the value a GET read, or a 409's current value; Absent for none
	// Values: what a multi-key GET or a query read, element i for key i,
	// Absent where the key held nothing.
	Values  []int64 `json:"values,omitempty"`
	Unknown bool    `json:"unknown,omitempty"`
}

// Infinity is the return time of an indeterminate operation.
const Infinity = math.MaxInt64

// Families. The model's unit is a family: a few keys that live in one Raft
// group (the workload places each family in one partition group of a
// partitioned region), named "<family>-..." ("f2-1-7" is in family f2; a
// key without '-' is a family of its own). Whatever one group does to a
// family's keys is all or nothing, so the model keeps a family's keys in
// one state and porcupine checks families independently. A request over
// several families is checked as one part per family, all with the
// request's call and return times: exactly the promise that each group's
// part of a request is atomic and the parts are independent (see partsOf).

// FamilyOf is the family key belongs to.
func FamilyOf(key string) string {
	if i := strings.IndexByte(key, '-'); i > 0 {
		return key[:i]
	}
	return key
}

// famState is the values of a family's keys by slot (Check numbers the
// keys of each family), with trailing Absent slots trimmed so that equal
// states are equal slices. Never modified: a step makes a new one.
type famState []int64

func (s famState) get(slot int) int64 {
	if slot < len(s) {
		return s[slot]
	}
	return Absent
}

// with returns s with slots[i] set to vals[i] (all Absent when vals is nil).
func (s famState) with(slots []int, vals []int64) famState {
	n := len(s)
	for _, sl := range slots {
		n = max(n, sl+1)
	}
	out := make(famState, n)
	copy(out, s)
	for i, sl := range slots {
		if vals == nil {
			out[sl] = Absent
		} else {
			out[sl] = vals[i]
		}
	}
	for len(out) > 0 && out[len(out)-1] == Absent {
		out = out[:len(out)-1]
	}
	return out
}

// mode says how much a part's answer tells.
type mode uint8

const (
	// definite: the part took effect, or was refused, as Output says.
	definite mode = iota
	// unknown: it took effect (where its condition held) at some time
	// after its call, or never; the return time is Infinity.
	unknown
	// maybe: it took effect (where its condition held) or did not, in
	// either case between call and return: a refused request spanning
	// groups, whose other groups may have applied their parts.
	maybe
)

// part is a request's operation on one family: what porcupine checks.
type part struct {
	Family string
	Kind   Kind // the request's kind
	Keys   []string
	Slots  []int
	Values []int64 // new values per key (put, put-if-absent, replace, cas)
	Olds   []int64 // expected values per key (cas)
}

type partOut struct {
	Mode   mode
	Status int
	Value  int64   // a single-key GET's value; a 409's current value
	Read   []int64 // a multi-key GET's or a query's values per key
}

// effect is the state after p took effect on s, where its condition held.
func (p part) effect(s famState) famState {
	switch p.Kind.single() {
	case Put:
		return s.with(p.Slots, p.Values)
	case PutIfAbsent:
		if s.get(p.Slots[0]) == Absent {
			return s.with(p.Slots, p.Values)
		}
	case Replace:
		if p.allPresent(s) {
			return s.with(p.Slots, p.Values)
		}
	case CAS:
		if p.allPresent(s) && p.mismatch(s) < 0 {
			return s.with(p.Slots, p.Values)
		}
	case Delete:
		if p.allPresent(s) {
			return s.with(p.Slots, nil)
		}
	}
	return s
}

func (p part) allPresent(s famState) bool {
	for _, sl := range p.Slots {
		if s.get(sl) == Absent {
			return false
		}
	}
	return true
}

// mismatch is the first key whose value is not the CAS's expected one, or
// -1 (the state machine checks in request order).
func (p part) mismatch(s famState) int {
	for i, sl := range p.Slots {
		if s.get(sl) != p.Olds[i] {
			return i
		}
	}
	return -1
}

// step is the sequential specification, from rest-details.md: the states
// p can leave when the family holds s and the answer was o (none: o is
// not a possible answer).
func step(s famState, p part, o partOut) []famState {
	switch o.Mode {
	case unknown:
		// Took effect (the checker may still order it last, which is
		// indistinguishable from never).
		return []famState{p.effect(s)}
	case maybe:
		if e := p.effect(s); !slices.Equal(e, s) {
			return []famState{s, e}
		}
		return []famState{s}
	}
	ok, next := stepDefinite(s, p, o)
	if !ok {
		return nil
	}
	return []famState{next}
}

func stepDefinite(s famState, p part, o partOut) (bool, famState) {
	switch p.Kind {
	case Get:
		if v := s.get(p.Slots[0]); v != Absent {
			return o.Status == 200 && o.Value == v, s
		}
		return o.Status == 404, s
	case MultiGet, Query:
		// Missing keys read as Absent (null, or left out of a query's rows).
		if o.Status != 200 || len(o.Read) != len(p.Slots) {
			return false, s
		}
		for i, sl := range p.Slots {
			if o.Read[i] != s.get(sl) {
				return false, s
			}
		}
		return true, s
	case PutIfAbsent:
		if v := s.get(p.Slots[0]); v != Absent {
			// 409 with the existing value as the body.
			return o.Status == 409 && o.Value == v, s
		}
		return o.Status == 201, p.effect(s)
	}
	switch p.Kind.single() {
	case Put:
		return o.Status == 200, p.effect(s)
	case Replace:
		if !p.allPresent(s) {
			return o.Status == 400, s
		}
		return o.Status == 200, p.effect(s)
	case CAS:
		if !p.allPresent(s) {
			return o.Status == 400, s
		}
		if i := p.mismatch(s); i >= 0 {
			return o.Status == 409 && o.Value == s.get(p.Slots[i]), s
		}
		return o.Status == 200, p.effect(s)
	case Delete:
		if !p.allPresent(s) {
			return o.Status == 404, s
		}
		return o.Status == 200, p.effect(s)
	}
	return false, s
}

// refusals are the definite answers a write may give that change nothing.
var refusals = map[Kind][]int{
	Replace: {400}, CAS: {400, 409}, Delete: {404},
}

// partsOf splits a recorded operation into one part per family it
// touches (slots numbers each family's keys). An operation on one family
// keeps its answer as it is when it was one Raft command. Otherwise:
//
//   - an indeterminate answer makes every part indeterminate on its own;
//   - a read's answer, or a write's success, is every part's answer: a
//     family is in one group, and each group read or applied its part
//     between the call and the return;
//   - a refusal of one command (OneGroup) changed nothing, in any family,
//     and cannot be pinned on one: its parts are left out;
//   - a refusal of a request spanning groups may come from one group while
//     others applied their parts: every part may or may not have taken
//     effect, within the call and return (the store answers 503, not the
//     refusal, while any part's outcome is unknown).
//
// An answer the operation cannot give at all stays as it is, so that the
// check rejects it.
func partsOf(op Op, slots map[string]int) []porcupine.Operation {
	in := op.Input
	keys := in.keys()
	var fams []string
	byFam := map[string]*part{}
	for i, k := range keys {
		f := FamilyOf(k)
		p := byFam[f]
		if p == nil {
			p = &part{Family: f, Kind: in.Kind}
			byFam[f] = p
			fams = append(fams, f)
		}
		p.Keys = append(p.Keys, k)
		p.Slots = append(p.Slots, slots[k])
		switch {
		case !in.Kind.Multi():
			if in.Kind != Get && in.Kind != Delete {
				p.Values = append(p.Values, in.Value)
			}
			if in.Kind == CAS {
				p.Olds = append(p.Olds, in.Old)
			}
		default:
			if i < len(in.Values) {
				p.Values = append(p.Values, in.Values[i])
			}
			if i < len(in.Olds) {
				p.Olds = append(p.Olds, in.Olds[i])
			}
		}
	}
	out := op.Output
	mk := func(p *part, o partOut) porcupine.Operation {
		return porcupine.Operation{ClientId: op.Client, Input: *p, Output: o, Call: op.Call, Return: op.Return, Metadata: op.Member}
	}
	// reads splits a read's values over the parts.
	read := func(p *part) []int64 {
		if out.Values == nil {
			return nil
		}
		var r []int64
		for i, k := range keys {
			if FamilyOf(k) == p.Family && i < len(out.Values) {
				r = append(r, out.Values[i])
			}
		}
		return r
	}
	var ops []porcupine.Operation
	single := len(fams) == 1 && (!in.Kind.Multi() || in.OneGroup || in.Kind == MultiGet || in.Kind == Query)
	for _, f := range fams {
		p := byFam[f]
		switch {
		case out.Unknown:
			ops = append(ops, mk(p, partOut{Mode: unknown}))
		case single:
			ops = append(ops, mk(p, partOut{Mode: definite, Status: out.Status, Value: out.Value, Read: read(p)}))
		case in.Kind == MultiGet || in.Kind == Query:
			ops = append(ops, mk(p, partOut{Mode: definite, Status: out.Status, Read: read(p)}))
		case out.Status == 200:
			ops = append(ops, mk(p, partOut{Mode: definite, Status: 200}))
		case slices.Contains(refusals[in.Kind.single()], out.Status):
			if !in.OneGroup {
				ops = append(ops, mk(p, partOut{Mode: maybe}))
			}
		default:
			// Not an answer this request can give: keep it, to be rejected.
			ops = append(ops, mk(p, partOut{Mode: definite, Status: out.Status, Value: out.Value}))
		}
	}
	return ops
}

// familySlots numbers the keys of every family in the history, in key
// order.
func familySlots(ops []Op) map[string]int {
	byFam := map[string][]string{}
	seen := map[string]bool{}
	for _, op := range ops {
		for _, k := range op.Input.keys() {
			if !seen[k] {
				seen[k] = true
				f := FamilyOf(k)
				byFam[f] = append(byFam[f], k)
			}
		}
	}
	slots := map[string]int{}
	for _, keys := range byFam {
		slices.Sort(keys)
		for i, k := range keys {
			slots[k] = i
		}
	}
	return slots
}

// Porcupine is the porcupine model of one region's families, checked
// family by family (Check and Verdict.Save use it; it is exported for a
// caller that drives porcupine itself). It is nondeterministic (a part
// whose effect is unknown leaves two possible states), turned into
// porcupine's deterministic form by its power-set construction; most
// steps leave one state.
func Porcupine() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byFam := map[string][]porcupine.Operation{}
			var order []string
			for _, op := range history {
				f := op.Input.(part).Family
				if _, ok := byFam[f]; !ok {
					order = append(order, f)
				}
				byFam[f] = append(byFam[f], op)
			}
			out := make([][]porcupine.Operation, 0, len(order))
			for _, f := range order {
				out = append(out, byFam[f])
			}
			return out
		},
		Init: func() []any { return []any{famState(nil)} },
		Step: func(state, in, out any) []any {
			next := step(state.(famState), in.(part), out.(partOut))
			states := make([]any, len(next))
			for i, s := range next {
				states[i] = s
			}
			return states
		},
		Equal: func(a, b any) bool { return slices.Equal(a.(famState), b.(famState)) },
		Hash: func(s any) uint64 {
			h := fnv.New64a()
			for _, v := range s.(famState) {
				var b [8]byte
				for i := range b {
					b[i] = byte(v >> (8 * i))
				}
				_, _ = h.Write(b[:])
			}
			return h.Sum64()
		},
		DescribeOperation: func(in, out any) string { return describe(in.(part), out.(partOut)) },
		DescribeState: func(state any) string {
			s := state.(famState)
			if len(s) == 0 {
				return "all absent"
			}
			parts := make([]string, len(s))
			for i, v := range s {
				parts[i] = "absent"
				if v != Absent {
					parts[i] = fmt.Sprint(v)
				}
			}
			return "[" + strings.Join(parts, " ") + "]"
		},
	}
	return nm.ToModel()
}

func describe(p part, o partOut) string {
	var args []string
	for i, k := range p.Keys {
		a := k
		switch {
		case i < len(p.Olds):
			a += fmt.Sprintf(" %d→%d", p.Olds[i], p.Values[i])
		case i < len(p.Values):
			a += fmt.Sprintf(" %d", p.Values[i])
		}
		args = append(args, a)
	}
	call := fmt.Sprintf("%s(%s)", p.Kind, strings.Join(args, ", "))
	switch o.Mode {
	case unknown:
		return call + " → ?"
	case maybe:
		return call + " → applied or not (the request, over several groups, was refused)"
	}
	switch {
	case o.Read != nil:
		return fmt.Sprintf("%s → %d %v", call, o.Status, o.Read)
	case o.Value != Absent:
		return fmt.Sprintf("%s → %d %d", call, o.Status, o.Value)
	}
	return fmt.Sprintf("%s → %d", call, o.Status)
}
