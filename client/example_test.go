package client_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// The examples run against a real member, so that their Output is what
// the API answers and not what a stub was told to say. An example gets
// no *testing.T, which nodetest needs, so the member is started with
// node.Start directly (configured as nodetest configures its members) the
// first time an example asks for it, and TestMain stops it after every
// test ran. Tests that do not run an example never start it. This state
// is the test binary's: package client has none.
var examples struct {
	once sync.Once
	node *node.Node
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if examples.node != nil {
		_ = examples.node.Close()
	}
	if examples.dir != "" {
		_ = os.RemoveAll(examples.dir)
	}
	os.Exit(code)
}

// endpoints is the REST URL of the examples' one-member cluster, started
// on first use and ready (every group led) when it returns; in a program,
// the members' URLs, e.g. "http://localhost:8080".
func endpoints() []string {
	examples.once.Do(func() { examples.err = startExampleMember() })
	if examples.err != nil {
		log.Fatalf("the examples' member: %v", examples.err)
	}
	return []string{examples.node.RESTURL()}
}

func startExampleMember() error {
	dir, err := os.MkdirTemp("", "kvnode-client-examples-")
	if err != nil {
		return err
	}
	examples.dir = dir
	cfg := node.Default()
	cfg.Name, cfg.DataDir, cfg.BootstrapExpect = "example", dir, 1
	cfg.HTTPAddr, cfg.InternalAddr, cfg.GossipAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	nodetest.Fast(&cfg)
	cfg.Logger = nodetest.Logger("example")
	if err := cfg.Validate(); err != nil {
		return err
	}
	if examples.node, err = node.Start(context.Background(), cfg); err != nil {
		return err
	}
	c, err := client.New(client.Config{Endpoints: []string{examples.node.RESTURL()}})
	if err != nil {
		return err
	}
	defer c.Close()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		rt, err := c.Routing(context.Background())
		if err != nil || len(rt.Groups) < 2 {
			continue
		}
		led := true
		for _, g := range rt.Groups {
			led = led && g.URL != ""
		}
		if led {
			return nil
		}
	}
	return fmt.Errorf("no leader for every group after 30 s")
}

// Connect, store an entry and read it back.
func Example() {
	ctx := context.Background()
	c, err := client.New(client.Config{Endpoints: endpoints()})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if err := c.CreateRegion(ctx, client.RegionInfo{Name: "orders", Type: client.Partition}); err != nil {
		log.Fatal(err)
	}
	orders := c.Region("orders")
	if err := orders.Put(ctx, "1", map[string]any{"@type": "Order", "total": 12}); err != nil {
		log.Fatal(err)
	}
	v, err := orders.Get(ctx, "1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(v))
	// Output: {"@type":"Order","total":12}
}

// An ad-hoc query with bind values: $1 and $2 take Go values.
func ExampleClient_Query() {
	ctx := context.Background()
	c, err := client.New(client.Config{Endpoints: endpoints()})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if err := c.CreateRegion(ctx, client.RegionInfo{Name: "books", Type: client.Replicate}); err != nil {
		log.Fatal(err)
	}
	err = c.Region("books").PutAll(ctx, []client.Entry{
		{Key: "b1", Value: map[string]any{"title": "Dune", "year": 1965}},
		{Key: "b2", Value: map[string]any{"title": "Neuromancer", "year": 1984}},
		{Key: "b3", Value: map[string]any{"title": "The Hobbit", "year": 1937}},
	})
	if err != nil {
		log.Fatal(err)
	}
	rows, err := c.Query(ctx, "SELECT b.title FROM /books b WHERE b.year > $1 AND b.title <> $2 ORDER BY b.title", 1950, "It's")
	if err != nil {
		log.Fatal(err)
	}
	for _, row := range rows {
		fmt.Println(string(row))
	}
	// Output:
	// "Dune"
	// "Neuromancer"
}

// A named query, stored once and run with bind values.
func ExampleQueries_Run() {
	ctx := context.Background()
	c, err := client.New(client.Config{Endpoints: endpoints()})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if err := c.CreateRegion(ctx, client.RegionInfo{Name: "people", Type: client.Partition}); err != nil {
		log.Fatal(err)
	}
	people := c.Region("people")
	for i, name := range []string{"ann", "bob", "cy"} {
		if err := people.Put(ctx, name, map[string]any{"name": name, "age": 30 + 10*i}); err != nil {
			log.Fatal(err)
		}
	}
	if err := c.Queries().Create(ctx, "olderThan", "SELECT p.name FROM /people p WHERE p.age > $1 ORDER BY p.name"); err != nil {
		log.Fatal(err)
	}
	rows, err := c.Queries().Run(ctx, "olderThan", 35)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(rows), string(rows[0]), string(rows[1]))
	// Output: 2 "bob" "cy"
}

// Deploy a JavaScript function and run it on every member.
func ExampleFunctions_Run() {
	ctx := context.Background()
	c, err := client.New(client.Config{Endpoints: endpoints()})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	_, err = c.Functions().Deploy(ctx, client.Function{
		ID:         "double",
		Source:     "function execute(ctx) { return ctx.args[0] * 2; }",
		Permission: "DATA:READ",
	})
	if err != nil {
		log.Fatal(err)
	}
	// The zero Target is every member; this cluster has one.
	results, err := c.Functions().Run(ctx, "double", client.Target{}, 21)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(results[0]))
	// Output: 42
}

// Start a rebalance and follow it to its end.
func ExampleCluster_Wait() {
	ctx := context.Background()
	c, err := client.New(client.Config{Endpoints: endpoints()})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	id, err := c.Cluster().Rebalance(ctx)
	if err != nil {
		log.Fatal(err)
	}
	op, err := c.Cluster().Wait(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(op.Status)
	// Output: SUCCESS
}
