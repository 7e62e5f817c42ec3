package node

import "github.com/kvnode/kvnode/store/regions"

// FunctionData is the function.Data adapter a running node gives its
// functions, for tests of those adapters through package node_test.
func FunctionData(n *Node) functionData {
	return functionData{store: n.store, regions: n.regions, queries: n.queries, cfg: n.cfg}
}

// Regions is a running node's data API, for tests of watches through
// package node_test before the REST layer.
func Regions(n *Node) *regions.API { return n.regions }
