package node

// FunctionData is the function.Data adapter a running node gives its
// functions, for tests of those adapters through package node_test.
func FunctionData(n *Node) functionData {
	return functionData{store: n.store, regions: n.regions, queries: n.queries, cfg: n.cfg}
}
