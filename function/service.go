package function

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
)

// Member is a live member as targeting sees it.
type Member struct {
	Name   string
	Groups []string // member groups (--groups)
}

// Cluster is what targeting needs to know of the cluster.
type Cluster interface {
	// Members lists the live members.
	Members() []Member
	// RegionKind says whether a region exists and is partitioned;
	// region.ErrRegionNotFound when it does not exist.
	RegionKind(ctx context.Context, name string) (partitioned bool, err error)
	// PartitionLeaders returns the partition table (the groups 1..P, the
	// owner of each key's bucket) and, per partition group, the member
	// leading it (where a data-aware function runs for the group).
	PartitionLeaders(ctx context.Context) (t partition.Table, leaders map[uint64]string, err error)
}

// Transport sends a function call to another member (the internal port's
// node-to-node RPC) and returns its answer.
type Transport interface {
	CallMember(ctx context.Context, member, path string, body []byte) ([]byte, error)
}

// RPCPath is the internal RPC path of a function call between members.
const RPCPath = "/v1/functions"

// Config assembles a Service.
type Config struct {
	Self      string
	Registry  *Registry
	Cluster   Cluster
	Transport Transport
	Data      Data
	// MaxCallBytes bounds a call received from another member (default
	// 64 MiB); a longer one is refused whole, never cut. The node sets it
	// to its frame limit, which follows --max-body-size.
	MaxCallBytes int64
}

// Service runs functions: it resolves a request's targets, runs the
// function on every targeted member (here, or over RPC) and gathers the
// results in member order.
type Service struct {
	cfg Config
}

// NewService returns a Service.
func NewService(cfg Config) *Service { return &Service{cfg: cfg} }

// Registry returns the service's registry.
func (s *Service) Registry() *Registry { return s.cfg.Registry }

// IDs lists every function id: built-in, registered and deployed.
func (s *Service) IDs(ctx context.Context) ([]string, error) {
	return s.cfg.Registry.IDs(ctx)
}

// Lookup returns the function of an id.
func (s *Service) Lookup(ctx context.Context, id string) (Function, error) {
	return s.cfg.Registry.Lookup(ctx, id)
}

// assignment is the part of a request one member runs.
type assignment struct {
	member string
	groups []uint64
	keys   []string
}

// Execute runs a request and returns the results (nil and hasResult false
// for a function that returns nothing).
func (s *Service) Execute(ctx context.Context, req Request) (results []json.RawMessage, hasResult bool, err error) {
	fn, err := s.cfg.Registry.Lookup(ctx, req.ID)
	if err != nil {
		return nil, false, err
	}
	targets := 0
	for _, set := range []bool{req.OnRegion != "", len(req.OnMembers) > 0, len(req.OnGroups) > 0} {
		if set {
			targets++
		}
	}
	if targets > 1 {
		return nil, false, fmt.Errorf("%w: give at most one of onRegion, onMembers and onGroups", region.ErrInvalid)
	}
	if len(req.Filter) > 0 && req.OnRegion == "" {
		return nil, false, fmt.Errorf("%w: filter needs onRegion with a partitioned region", region.ErrInvalid)
	}
	if fn.DataAware && req.OnRegion == "" {
		return nil, false, fmt.Errorf("%w: function %s is data-aware: give onRegion", region.ErrInvalid, fn.ID)
	}
	plan, partitioned, err := s.targets(ctx, req)
	if err != nil {
		return nil, false, err
	}
	per := make([][]json.RawMessage, len(plan))
	errs := make([]error, len(plan))
	var wg sync.WaitGroup
	for i, a := range plan {
		wg.Add(1)
		go func() {
			defer wg.Done()
			per[i], errs[i] = s.runOn(ctx, fn, req, a, partitioned)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			var me *MemberError
			if errors.As(err, &me) {
				return nil, false, err
			}
			return nil, false, &MemberError{Member: plan[i].member, Err: err}
		}
	}
	for _, p := range per {
		results = append(results, p...)
	}
	if fn.Reduce != nil {
		if results, err = fn.Reduce(&req, results); err != nil {
			return nil, false, fmt.Errorf("combine the members' results: %w", err)
		}
	}
	if results == nil {
		results = []json.RawMessage{}
	}
	return results, fn.HasResult, nil
}

// targets resolves where the request runs, in member order.
func (s *Service) targets(ctx context.Context, req Request) ([]assignment, bool, error) {
	members := s.cfg.Cluster.Members()
	sort.Slice(members, func(i, j int) bool { return members[i].Name < members[j].Name })
	switch {
	case req.OnRegion != "":
		partitioned, err := s.cfg.Cluster.RegionKind(ctx, req.OnRegion)
		if errors.Is(err, region.ErrRegionNotFound) {
			return nil, false, fmt.Errorf("onRegion %q: %w: the region does not exist", req.OnRegion, ErrUnknownTarget)
		}
		if err != nil {
			return nil, false, err
		}
		if !partitioned {
			if len(req.Filter) > 0 {
				return nil, false, fmt.Errorf("%w: filter applies to partitioned regions only; %s is replicated", region.ErrInvalid, req.OnRegion)
			}
			// Every member holds a replicated region: this one runs it.
			return []assignment{{member: s.cfg.Self}}, false, nil
		}
		t, leaders, err := s.cfg.Cluster.PartitionLeaders(ctx)
		if err != nil {
			return nil, true, err
		}
		byMember := map[string]*assignment{}
		add := func(gid uint64, key string) error {
			m, ok := leaders[gid]
			if !ok || m == "" {
				return fmt.Errorf("partition group %d: %w", gid, region.ErrNoLeader)
			}
			a := byMember[m]
			if a == nil {
				a = &assignment{member: m}
				byMember[m] = a
			}
			if !slices.Contains(a.groups, gid) {
				a.groups = append(a.groups, gid)
			}
			if key != "" {
				a.keys = append(a.keys, key)
			}
			return nil
		}
		if len(req.Filter) > 0 {
			for _, k := range req.Filter {
				if err := add(t.GroupFor(k), k); err != nil {
					return nil, true, err
				}
			}
		} else {
			for gid := uint64(1); gid <= uint64(t.P()); gid++ {
				if err := add(gid, ""); err != nil {
					return nil, true, err
				}
			}
		}
		var plan []assignment
		for _, a := range byMember {
			slices.Sort(a.groups)
			plan = append(plan, *a)
		}
		sort.Slice(plan, func(i, j int) bool { return plan[i].member < plan[j].member })
		return plan, true, nil
	case len(req.OnMembers) > 0:
		var plan []assignment
		for _, name := range req.OnMembers {
			if !slices.ContainsFunc(members, func(m Member) bool { return m.Name == name }) {
				return nil, false, fmt.Errorf("onMembers %q: %w: no live member has that name", name, ErrUnknownTarget)
			}
			if !slices.ContainsFunc(plan, func(a assignment) bool { return a.member == name }) {
				plan = append(plan, assignment{member: name})
			}
		}
		sort.Slice(plan, func(i, j int) bool { return plan[i].member < plan[j].member })
		return plan, false, nil
	case len(req.OnGroups) > 0:
		var plan []assignment
		for _, g := range req.OnGroups {
			found := false
			for _, m := range members {
				if slices.Contains(m.Groups, g) {
					found = true
					if !slices.ContainsFunc(plan, func(a assignment) bool { return a.member == m.Name }) {
						plan = append(plan, assignment{member: m.Name})
					}
				}
			}
			if !found {
				return nil, false, fmt.Errorf("onGroups %q: %w: no live member is in that group", g, ErrUnknownTarget)
			}
		}
		sort.Slice(plan, func(i, j int) bool { return plan[i].member < plan[j].member })
		return plan, false, nil
	}
	plan := make([]assignment, 0, len(members))
	for _, m := range members {
		plan = append(plan, assignment{member: m.Name})
	}
	if len(plan) == 0 {
		plan = append(plan, assignment{member: s.cfg.Self})
	}
	return plan, false, nil
}

// wireCall is a function call sent to another member.
type wireCall struct {
	ID          string   `json:"id"`
	Args        []Arg    `json:"args"`
	Region      string   `json:"region,omitempty"`
	Partitioned bool     `json:"partitioned,omitempty"`
	Groups      []uint64 `json:"groups,omitempty"`
	Keys        []string `json:"keys,omitempty"`
}

// runOn runs one member's part.
func (s *Service) runOn(ctx context.Context, fn Function, req Request, a assignment, partitioned bool) ([]json.RawMessage, error) {
	if a.member == s.cfg.Self {
		return s.runLocal(ctx, fn, wireCall{ID: req.ID, Args: req.Args, Region: req.OnRegion, Partitioned: partitioned, Groups: a.groups, Keys: a.keys})
	}
	body, err := json.Marshal(wireCall{ID: req.ID, Args: req.Args, Region: req.OnRegion, Partitioned: partitioned, Groups: a.groups, Keys: a.keys})
	if err != nil {
		return nil, fmt.Errorf("encode the call: %w", err)
	}
	data, err := s.cfg.Transport.CallMember(ctx, a.member, RPCPath, body)
	if err != nil {
		return nil, &MemberError{Member: a.member, Err: err}
	}
	var out []json.RawMessage
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, &MemberError{Member: a.member, Err: fmt.Errorf("decode its results: %w", err)}
	}
	return out, nil
}

// runLocal runs a call on this member.
func (s *Service) runLocal(ctx context.Context, fn Function, wc wireCall) ([]json.RawMessage, error) {
	c := &Call{Member: s.cfg.Self, Args: wc.Args, Region: wc.Region, Partitioned: wc.Partitioned, Groups: wc.Groups, Filter: wc.Keys, Data: s.cfg.Data}
	res, err := fn.Run(ctx, c)
	if err != nil {
		return nil, &MemberError{Member: s.cfg.Self, Err: err}
	}
	out := make([]json.RawMessage, 0, len(res))
	for _, r := range res {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, &MemberError{Member: s.cfg.Self, Err: fmt.Errorf("encode a result: %w", err)}
		}
		out = append(out, b)
	}
	return out, nil
}

// RPCHandler serves function calls from other members (register it on the
// internal port at RPCPath).
func (s *Service) RPCHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := s.cfg.MaxCallBytes
		if limit <= 0 {
			limit = 64 << 20
		}
		data, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil {
			http.Error(w, "read the call: "+err.Error(), http.StatusBadRequest)
			return
		}
		if int64(len(data)) > limit {
			http.Error(w, fmt.Sprintf("the call is larger than the %d-byte internal frame limit (set by --max-body-size)", limit), http.StatusRequestEntityTooLarge)
			return
		}
		var wc wireCall
		if err := json.Unmarshal(data, &wc); err != nil {
			http.Error(w, "decode the call: "+err.Error(), http.StatusBadRequest)
			return
		}
		fn, err := s.cfg.Registry.Lookup(r.Context(), wc.ID)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		out, err := s.runLocal(r.Context(), fn, wc)
		if err != nil {
			var me *MemberError
			if errors.As(err, &me) {
				err = me.Err
			}
			http.Error(w, strings.TrimSpace(err.Error()), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}
