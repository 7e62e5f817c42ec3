package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kvnode/kvnode/function"
	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store"
	"github.com/kvnode/kvnode/store/catalog"
	"github.com/kvnode/kvnode/store/query"
	"github.com/kvnode/kvnode/store/regions"
	"github.com/kvnode/kvnode/store/transport"
)

// Server-side functions need the store (data, Raft, the internal port) and
// gossip (members, member groups) at once; package function knows neither,
// so the adapters that join them live here, where both are wired.

// functionCluster is function.Cluster over gossip and the store.
type functionCluster struct {
	store   *store.Store
	regions *regions.API
	members trusted
}

// Members are the members a function may run on: alive, and proved
// (a stranger in gossip is never sent a call).
func (fc functionCluster) Members() []function.Member {
	var out []function.Member
	for _, m := range fc.members.Alive() {
		out = append(out, function.Member{Name: m.Name, Groups: m.Groups})
	}
	return out
}

func (fc functionCluster) RegionKind(ctx context.Context, name string) (bool, error) {
	info, err := fc.regions.Region(ctx, region.Linearizable, name)
	if err != nil {
		return false, err
	}
	return info.Kind == region.Partition, nil
}

func (fc functionCluster) PartitionLeaders(ctx context.Context) (partition.Table, map[uint64]string, error) {
	return fc.store.PartitionLeaders(ctx)
}

// functionData is function.Data over the store, its regions and queries.
type functionData struct {
	store   *store.Store
	regions *regions.API
	queries *query.Engine
	cfg     Config
	restURL string
	started time.Time
}

func (d functionData) Get(ctx context.Context, name, key string) (json.RawMessage, error) {
	vals, err := d.regions.Get(ctx, region.Linearizable, name, []string{key})
	if err != nil {
		return nil, err
	}
	return vals[0], nil
}

func (d functionData) GetMany(ctx context.Context, name string, keys []string) ([]json.RawMessage, error) {
	return d.regions.Get(ctx, region.Linearizable, name, keys)
}

func (d functionData) Put(ctx context.Context, name, key string, value json.RawMessage) error {
	v, err := region.NormalizeValue(value)
	if err != nil {
		return err
	}
	return d.regions.Put(ctx, name, []region.Entry{{Key: key, Value: v}}, region.TTL{})
}

func (d functionData) PutIfAbsent(ctx context.Context, name, key string, value json.RawMessage) (json.RawMessage, error) {
	v, err := region.NormalizeValue(value)
	if err != nil {
		return nil, err
	}
	_, err = d.regions.PutIfAbsent(ctx, name, region.Entry{Key: key, Value: v}, region.TTL{})
	var ce *region.ConflictError
	if errors.As(err, &ce) {
		return ce.Current, nil
	}
	return nil, err
}

func (d functionData) Replace(ctx context.Context, name, key string, old, newValue json.RawMessage) (bool, error) {
	v, err := region.NormalizeValue(newValue)
	if err != nil {
		return false, err
	}
	err = d.regions.CAS(ctx, name, []region.CASPair{{Key: key, Old: old, New: v}}, region.TTL{})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, region.ErrCASMismatch), errors.Is(err, region.ErrKeyAbsent):
		return false, nil
	}
	return false, err
}

// Remove is atomic (store.Remove): the value returned is the one removed.
func (d functionData) Remove(ctx context.Context, name, key string) (json.RawMessage, error) {
	return d.regions.Remove(ctx, name, key)
}

func (d functionData) Count(ctx context.Context, name string) (int, error) {
	return d.regions.Count(ctx, region.Linearizable, name)
}

func (d functionData) Query(ctx context.Context, text string, params []any) (json.RawMessage, error) {
	q, err := d.queries.CompileQuery(text)
	if err != nil {
		return nil, err
	}
	if err := q.CheckBinds("the query", len(params)); err != nil {
		return nil, err
	}
	res, err := d.queries.Query(ctx, region.Linearizable, q, params, oql.Options{MaxRows: d.cfg.MaxQueryRows})
	if err != nil {
		return nil, err
	}
	return res.MarshalJSON()
}

func (d functionData) ScanLocal(ctx context.Context, name string, groups []uint64, fn func(string, json.RawMessage) bool) error {
	return d.regions.ScanLocal(ctx, name, groups, fn)
}

func (d functionData) CountLocal(ctx context.Context, name string, groups []uint64) ([]int, error) {
	return d.regions.CountLocal(ctx, name, groups)
}

func (d functionData) ClearLocal(ctx context.Context, name string, groups []uint64) error {
	return d.regions.ClearLocal(ctx, name, groups)
}

// memberInfo is what the MemberInfo function answers for one member.
type memberInfo struct {
	Name          string        `json:"name"`
	Groups        []string      `json:"groups"`
	RESTURL       string        `json:"restUrl"`
	Version       string        `json:"version"`
	UptimeSeconds int64         `json:"uptimeSeconds"`
	RaftGroups    []memberGroup `json:"raftGroups"`
}

// memberGroup is one Raft group this member hosts and its role there.
type memberGroup struct {
	Group  uint64 `json:"group"`
	Role   string `json:"role"`
	Leader string `json:"leader"`
}

func (d functionData) MemberInfo(context.Context) (any, error) {
	groups := d.cfg.Groups
	if groups == nil {
		groups = []string{}
	}
	info := memberInfo{
		Name:          d.cfg.Name,
		Groups:        groups,
		RESTURL:       d.restURL,
		Version:       d.cfg.Version,
		UptimeSeconds: int64(time.Since(d.started).Seconds()),
		RaftGroups:    []memberGroup{},
	}
	for _, g := range d.store.Status().Groups {
		info.RaftGroups = append(info.RaftGroups, memberGroup{Group: g.ID, Role: strings.ToLower(g.State), Leader: g.Leader})
	}
	return info, nil
}

// deployments keeps deployed functions in the control group.
type deployments struct {
	catalog *catalog.Catalog
}

func (ds deployments) Deployment(ctx context.Context, id string) (function.Deployment, bool, error) {
	raw, ok, err := ds.catalog.Function(ctx, id)
	if err != nil || !ok {
		return function.Deployment{}, false, err
	}
	var d function.Deployment
	if err := json.Unmarshal(raw, &d); err != nil {
		return function.Deployment{}, false, fmt.Errorf("deployed function %s does not decode: %w", id, err)
	}
	return d, true, nil
}

func (ds deployments) Deployments(ctx context.Context) ([]function.Deployment, error) {
	all, err := ds.catalog.Functions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]function.Deployment, 0, len(all))
	for key, raw := range all {
		var d function.Deployment
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("deployed function %s does not decode: %w", key, err)
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// functions is the REST API's view of functions: running them, and the
// deployments.
type functions struct {
	*function.Service
	deployed deployments
}

func (f functions) Deployments(ctx context.Context) ([]function.Deployment, error) {
	return f.deployed.Deployments(ctx)
}

func (f functions) Deployment(ctx context.Context, id string) (function.Deployment, bool, error) {
	return f.deployed.Deployment(ctx, id)
}

// Deploy checks and stores a deployment; a built-in's id is taken.
func (f functions) Deploy(ctx context.Context, d function.Deployment) (bool, error) {
	if err := function.Check(&d); err != nil {
		return false, err
	}
	if f.Registry().IsRegistered(d.ID) {
		return false, fmt.Errorf("function %q: %w: a built-in function has that id", d.ID, region.ErrKeyExists)
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return false, fmt.Errorf("encode the deployment: %w", err)
	}
	return f.deployed.catalog.PutFunction(ctx, d.ID, raw)
}

// Permission is what running a function needs.
func (f functions) Permission(ctx context.Context, id string) (string, error) {
	fn, err := f.Lookup(ctx, id)
	if err != nil {
		return "", err
	}
	return fn.Permission, nil
}

// Undeploy removes a deployment; region.ErrKeyNotFound if there is none.
func (f functions) Undeploy(ctx context.Context, id string) error {
	return f.deployed.catalog.DeleteFunction(ctx, id)
}

// newFunctions wires the function service of a node.
func newFunctions(cfg Config, st *store.Store, regs *regions.API, queries *query.Engine, cat *catalog.Catalog, members trusted, restURL string) (functions, error) {
	ds := deployments{catalog: cat}
	reg, err := function.NewRegistry(function.Limits{Timeout: cfg.FunctionTimeout}, ds, function.Builtins()...)
	if err != nil {
		return functions{}, err
	}
	svc := function.NewService(function.Config{
		Self:      cfg.Name,
		Registry:  reg,
		Cluster:   functionCluster{store: st, regions: regs, members: members},
		Transport: st,
		Data:      functionData{store: st, regions: regs, queries: queries, cfg: cfg, restURL: restURL, started: time.Now()},
		// Arguments come from request bodies, which any member forwards.
		MaxCallBytes: transport.FrameLimit(cfg.MaxBodySize),
	})
	st.HandleRPC("POST "+function.RPCPath, svc.RPCHandler())
	return functions{Service: svc, deployed: ds}, nil
}
