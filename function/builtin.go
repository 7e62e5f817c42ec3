package function

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/kvnode/kvnode/region"
)

// Builtins are the functions every node has (README, Functions).
func Builtins() []Function {
	return []Function{
		{
			ID:          "MemberInfo",
			Description: "every targeted member: name, groups, REST URL, version, uptime, and its Raft groups with its role in each",
			Permission:  "CLUSTER:READ",
			HasResult:   true,
			Run: func(ctx context.Context, c *Call) ([]any, error) {
				info, err := c.Data.MemberInfo(ctx)
				if err != nil {
					return nil, err
				}
				return []any{info}, nil
			},
		},
		{
			ID:          "RegionSize",
			Description: "entries of the onRegion region per member (per partition group for a partitioned region), then the total",
			Permission:  "DATA:READ",
			HasResult:   true,
			DataAware:   true,
			Run:         regionSize,
			Reduce:      regionSizeTotal,
		},
		{
			ID:          "SumField",
			Description: "the sum of a numeric member (the one string argument, a.b for nested members) over the onRegion region's values, or the filter keys' values",
			Permission:  "DATA:READ",
			HasResult:   true,
			DataAware:   true,
			Run:         sumField,
			Reduce:      sumFieldTotal,
		},
		{
			ID:          "GetAll",
			Description: "the values of the filter keys of the onRegion region, in filter order (null for a missing key); without a filter every value, in key order",
			Permission:  "DATA:READ",
			HasResult:   true,
			DataAware:   true,
			Run:         getAll,
			Reduce:      getAllOrder,
		},
		{
			ID:          "ClearRegion",
			Description: "removes every entry of the onRegion region; a partitioned region is cleared group by group through Raft, each group atomically",
			Permission:  "DATA:WRITE",
			DataAware:   true,
			Run: func(ctx context.Context, c *Call) ([]any, error) {
				return nil, c.Data.ClearLocal(ctx, c.Region, c.Groups)
			},
		},
	}
}

// regionCount is one RegionSize result.
type regionCount struct {
	Member  string `json:"member"`
	Region  string `json:"region"`
	Group   uint64 `json:"group,omitempty"`
	Entries int    `json:"entries"`
}

func regionSize(ctx context.Context, c *Call) ([]any, error) {
	counts, err := c.Data.CountLocal(ctx, c.Region, c.Groups)
	if err != nil {
		return nil, err
	}
	if !c.Partitioned {
		return []any{regionCount{Member: c.Member, Region: c.Region, Entries: counts[0]}}, nil
	}
	out := make([]any, len(c.Groups))
	for i, g := range c.Groups {
		out[i] = regionCount{Member: c.Member, Region: c.Region, Group: g, Entries: counts[i]}
	}
	return out, nil
}

// regionSizeTotal appends {"region":..,"total":..} to the counts.
func regionSizeTotal(req *Request, results []json.RawMessage) ([]json.RawMessage, error) {
	total := int64(0)
	for _, r := range results {
		total += gjson.GetBytes(r, "entries").Int()
	}
	t, _ := json.Marshal(struct {
		Region string `json:"region"`
		Total  int64  `json:"total"`
	}{req.OnRegion, total})
	return append(results, t), nil
}

// fieldArg is SumField's one string argument: a member name, a.b for a
// nested member.
func fieldArg(c *Call) ([]string, error) {
	if len(c.Args) != 1 || c.Args[0].IsObject() {
		return nil, fmt.Errorf("%w: SumField takes one string argument, the member to sum", region.ErrInvalid)
	}
	s, ok := c.Args[0].Value.(string)
	if !ok || s == "" {
		return nil, fmt.Errorf("%w: SumField's argument must be a member name, got %v", region.ErrInvalid, c.Args[0].Value)
	}
	return strings.Split(s, "."), nil
}

// member reads a member path of a JSON value.
func member(value []byte, path []string) gjson.Result {
	r := gjson.ParseBytes(value)
	for _, name := range path {
		var next gjson.Result
		found := false
		if r.IsObject() {
			r.ForEach(func(k, v gjson.Result) bool {
				if k.Str == name {
					next, found = v, true
					return false
				}
				return true
			})
		}
		if !found {
			return gjson.Result{}
		}
		r = next
	}
	return r
}

// partialSum sums the numbers of one member's share: exactly while they
// are integers.
type partialSum struct {
	ints    int64
	floats  float64
	isFloat bool
	count   int
}

func (p *partialSum) add(r gjson.Result) {
	if r.Type != gjson.Number {
		return
	}
	p.count++
	if !strings.ContainsAny(r.Raw, ".eE") {
		if n, err := strconv.ParseInt(r.Raw, 10, 64); err == nil {
			p.ints += n
			return
		}
	}
	p.isFloat = true
	p.floats += r.Num
}

func (p *partialSum) value() any {
	if !p.isFloat {
		return p.ints
	}
	return p.floats + float64(p.ints)
}

func sumField(ctx context.Context, c *Call) ([]any, error) {
	path, err := fieldArg(c)
	if err != nil {
		return nil, err
	}
	var sum partialSum
	if len(c.Filter) > 0 {
		vals, err := c.Data.GetMany(ctx, c.Region, c.Filter)
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			if v != nil {
				sum.add(member(v, path))
			}
		}
	} else if err := c.Data.ScanLocal(ctx, c.Region, c.Groups, func(_ string, v json.RawMessage) bool {
		sum.add(member(v, path))
		return true
	}); err != nil {
		return nil, err
	}
	return []any{struct {
		Member string   `json:"member"`
		Groups []uint64 `json:"groups,omitempty"`
		Count  int      `json:"count"`
		Sum    any      `json:"sum"`
	}{c.Member, c.Groups, sum.count, sum.value()}}, nil
}

// sumFieldTotal merges the members' partial sums into the answer: [sum].
func sumFieldTotal(_ *Request, results []json.RawMessage) ([]json.RawMessage, error) {
	var total partialSum
	for _, r := range results {
		s := gjson.GetBytes(r, "sum")
		total.add(s)
	}
	v := total.value()
	if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
		return nil, fmt.Errorf("the sum is not a finite number")
	}
	b, _ := json.Marshal(v)
	return []json.RawMessage{b}, nil
}

// keyed is one value GetAll found.
type keyed struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

func getAll(ctx context.Context, c *Call) ([]any, error) {
	var out []any
	if len(c.Filter) > 0 {
		vals, err := c.Data.GetMany(ctx, c.Region, c.Filter)
		if err != nil {
			return nil, err
		}
		for i, v := range vals {
			if v == nil {
				v = json.RawMessage("null")
			}
			out = append(out, keyed{Key: c.Filter[i], Value: v})
		}
		return out, nil
	}
	err := c.Data.ScanLocal(ctx, c.Region, c.Groups, func(k string, v json.RawMessage) bool {
		out = append(out, keyed{Key: k, Value: v})
		return true
	})
	return out, err
}

// getAllOrder answers the values alone: in filter order, or in key order.
func getAllOrder(req *Request, results []json.RawMessage) ([]json.RawMessage, error) {
	byKey := map[string]json.RawMessage{}
	var keys []string
	for _, r := range results {
		var kv keyed
		if err := json.Unmarshal(r, &kv); err != nil {
			return nil, err
		}
		if _, seen := byKey[kv.Key]; !seen {
			keys = append(keys, kv.Key)
		}
		byKey[kv.Key] = kv.Value
	}
	if len(req.Filter) == 0 {
		slices.Sort(keys)
	} else {
		keys = req.Filter
	}
	out := make([]json.RawMessage, len(keys))
	for i, k := range keys {
		v, ok := byKey[k]
		if !ok {
			v = json.RawMessage("null")
		}
		out[i] = v
	}
	return out, nil
}
