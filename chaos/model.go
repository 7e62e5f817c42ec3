package chaos

import (
	"fmt"
	"math"

	"github.com/anishathalye/porcupine"
)

// Kind is the operation a client performed, one per REST form.
type Kind uint8

const (
	Get         Kind = iota // GET /kv/v1/{region}/{key}
	Put                     // PUT /kv/v1/{region}/{key}
	PutIfAbsent             // POST /kv/v1/{region}?key={key}
	Replace                 // PUT ...?op=REPLACE
	CAS                     // PUT ...?op=CAS {"@old","@new"}
	Delete                  // DELETE /kv/v1/{region}/{key}
)

var kindNames = [...]string{"get", "put", "put-if-absent", "replace", "cas", "delete"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Absent is the value of a key that holds nothing. Written values are
// positive.
const Absent = 0

// Input is what a client asked.
type Input struct {
	Kind  Kind   `json:"kind"`
	Key   string `json:"key"`
	Value int64  `json:"value,omitempty"` // Put, PutIfAbsent, Replace; CAS's new value
	Old   int64  `json:"old,omitempty"`   // CAS's expected value
}

// Output is what came back. Unknown means the client cannot tell whether
// the operation took effect; then nothing else is meaningful.
type Output struct {
	Status  int   `json:"status,omitempty"`
	Value   int64 `json:"value,omitempty"` // the value a GET read, or a 409's current value; Absent for none
	Unknown bool  `json:"unknown,omitempty"`
}

// Infinity is the return time of an indeterminate operation.
const Infinity = math.MaxInt64

// step is the sequential specification of one key, from rest-details.md:
// it returns whether out is a possible answer to in when the key holds
// state, and the state after.
func step(state int64, in Input, out Output) (bool, int64) {
	if out.Unknown {
		// Took effect (the checker may still order it last, which is
		// indistinguishable from never).
		switch in.Kind {
		case Put:
			return true, in.Value
		case PutIfAbsent:
			if state == Absent {
				return true, in.Value
			}
		case Replace:
			if state != Absent {
				return true, in.Value
			}
		case CAS:
			if state != Absent && state == in.Old {
				return true, in.Value
			}
		case Delete:
			return true, Absent
		}
		return true, state
	}
	switch in.Kind {
	case Get:
		if state == Absent {
			return out.Status == 404, state
		}
		return out.Status == 200 && out.Value == state, state
	case Put:
		return out.Status == 200, in.Value
	case PutIfAbsent:
		if state == Absent {
			return out.Status == 201, in.Value
		}
		// 409 with the existing value as the body.
		return out.Status == 409 && out.Value == state, state
	case Replace:
		if state == Absent {
			return out.Status == 400, state
		}
		return out.Status == 200, in.Value
	case CAS:
		switch {
		case state == Absent:
			return out.Status == 400, state
		case state == in.Old:
			return out.Status == 200, in.Value
		default:
			return out.Status == 409 && out.Value == state, state
		}
	case Delete:
		if state == Absent {
			return out.Status == 404, state
		}
		return out.Status == 200, Absent
	}
	return false, state
}

// Model is the porcupine model of one region's keys, checked key by key.
func Model() porcupine.Model {
	return porcupine.Model{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[string][]porcupine.Operation{}
			var order []string
			for _, op := range history {
				k := op.Input.(Input).Key
				if _, ok := byKey[k]; !ok {
					order = append(order, k)
				}
				byKey[k] = append(byKey[k], op)
			}
			out := make([][]porcupine.Operation, 0, len(order))
			for _, k := range order {
				out = append(out, byKey[k])
			}
			return out
		},
		Init: func() any { return int64(Absent) },
		Step: func(state, in, out any) (bool, any) {
			return step(state.(int64), in.(Input), out.(Output))
		},
		DescribeOperation: func(in, out any) string {
			i, o := in.(Input), out.(Output)
			var args string
			switch i.Kind {
			case Put, PutIfAbsent, Replace:
				args = fmt.Sprintf(", %d", i.Value)
			case CAS:
				args = fmt.Sprintf(", %d→%d", i.Old, i.Value)
			}
			if o.Unknown {
				return fmt.Sprintf("%s(%s%s) → ?", i.Kind, i.Key, args)
			}
			if o.Value != Absent {
				return fmt.Sprintf("%s(%s%s) → %d %d", i.Kind, i.Key, args, o.Status, o.Value)
			}
			return fmt.Sprintf("%s(%s%s) → %d", i.Kind, i.Key, args, o.Status)
		},
		DescribeState: func(state any) string {
			if state.(int64) == Absent {
				return "absent"
			}
			return fmt.Sprintf("%d", state.(int64))
		},
	}
}
