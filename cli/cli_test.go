package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/cli"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// result is what one invocation of kvnode printed and how it exited.
type result struct {
	out, err string
	code     int
}

// kvnode runs the client commands as the binary does (cmd/kvnode adds the
// server's commands beside them): args and env as given, stdin from in.
func kvnode(t *testing.T, env []string, in string, args ...string) result {
	t.Helper()
	root := &cobra.Command{Use: "kvnode", SilenceErrors: true, SilenceUsage: true}
	cli.Attach(root, env)
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(in))
	root.SetOut(&out)
	root.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	r := result{out: out.String(), err: errOut.String(), code: cli.ExitCode(err)}
	if err != nil {
		r.err += err.Error()
	}
	return r
}

// cluster is a running cluster and the environment that points kvnode at it.
type cluster struct {
	*nodetest.Cluster
	urls []string
	env  []string
}

// startCluster starts n in-process members (tune adjusts each one's
// configuration) and waits until they agree on a leader.
func startCluster(t *testing.T, n int, scheme string, tune func(string, *node.Config)) *cluster {
	t.Helper()
	c := &cluster{Cluster: nodetest.New(t)}
	c.Tune = tune
	for i := 1; i <= n; i++ {
		m := c.Start("n"+string(rune('0'+i)), n)
		c.urls = append(c.urls, scheme+"://"+m.HTTPAddr())
	}
	c.env = []string{"KVNODE_URL=" + strings.Join(c.urls, ",")}
	return c
}

// waitReady waits until status (with env and args for the connection)
// shows a leader in every group: until the partition table exists, status
// is the API's 503.
func waitReady(t *testing.T, env []string, args ...string) {
	t.Helper()
	waitfor.Cond(t, 30*time.Second, "status to show a leader in every group", func() bool {
		r := kvnode(t, env, "", append([]string{"status", "-o", "json"}, args...)...)
		return r.code == 0 && !strings.Contains(r.out, `"leader":""`)
	})
}

// must runs kvnode and fails the test unless it exits 0.
func must(t *testing.T, env []string, in string, args ...string) string {
	t.Helper()
	r := kvnode(t, env, in, args...)
	if r.code != 0 {
		t.Fatalf("kvnode %s: exit %d, %s", strings.Join(args, " "), r.code, r.err)
	}
	return r.out
}

// expect checks an invocation's exit code and output.
func expect(t *testing.T, r result, code int, out string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit code %d, want %d (stderr: %s)", r.code, code, r.err)
	}
	if r.out != out {
		t.Errorf("output:\n%s\nwant:\n%s", r.out, out)
	}
}

// writeFile writes a file into dir and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCommands runs every client command against a three-member cluster
// without security: the table and JSON outputs, and the exit code of each
// kind of refusal.
func TestCommands(t *testing.T) {
	c := startCluster(t, 3, "http", nil)
	env := c.env
	waitReady(t, env)
	run := func(in string, args ...string) result { return kvnode(t, env, in, args...) }
	dir := t.TempDir()

	t.Run("region", func(t *testing.T) {
		expect(t, run("", "region", "create", "events", "--type", "partition"), 0, "region events created\n")
		expect(t, run("", "region", "create", "orders"), 0, "region orders created\n")
		expect(t, run("", "region", "create", "orders"), cli.ExitConflict, "")
		expect(t, run("", "region", "create", "bad name"), cli.ExitBadInput, "")
		expect(t, run("", "region", "create", "tmp", "-o", "json"), 0, `{"statusCode":"OK","statusMessage":"region tmp created"}`+"\n")
		expect(t, run("", "region", "list"), 0, "NAME    TYPE\nevents  PARTITION\norders  REPLICATE\ntmp     REPLICATE\n")
		expect(t, run("", "region", "destroy", "tmp", "-o", "json"), 0, `{"statusCode":"OK","statusMessage":"region tmp deleted"}`+"\n")
		expect(t, run("", "region", "destroy", "tmp"), cli.ExitNotFound, "")
		expect(t, run("", "region", "list", "-o", "json"), 0,
			`{"regions":[{"name":"events","type":"PARTITION"},{"name":"orders","type":"REPLICATE"}]}`+"\n")
	})

	t.Run("member", func(t *testing.T) {
		// Removing a member that answers gossip is refused (it would join
		// again); an unknown name is not found. Neither changes anything
		// (node's TestRemoveMember removes a stopped one).
		expect(t, run("", "member", "remove", "n2"), cli.ExitConflict, "")
		expect(t, run("", "member", "remove", "nobody"), cli.ExitNotFound, "")
		expect(t, run("", "region", "list"), 0, "NAME    TYPE\nevents  PARTITION\norders  REPLICATE\n")
	})

	t.Run("put and get", func(t *testing.T) {
		expect(t, run("", "put", "orders", "1", `{"total":10.0,"name":"a"}`), 0, "stored orders/1\n")
		expect(t, run(`{"total":3}`+"\n", "put", "orders", "2", "-"), 0, "stored orders/2\n")
		file := writeFile(t, dir, "v.json", `{"total":7,"name":"it's"}`)
		expect(t, run("", "put", "orders", "3", "--file", file, "-o", "json"), 0, "")
		// Put-if-absent on an existing key: a conflict that prints the current value.
		expect(t, run("", "put", "orders", "1", `{"x":1}`, "--if-absent"), cli.ExitConflict, `{"total":10.0,"name":"a"}`+"\n")
		expect(t, run("", "put", "orders", "4", `{"total":1}`, "--if-absent"), 0, "stored orders/4\n")
		// REPLACE of an absent key is the API's 400.
		expect(t, run("", "put", "orders", "99", `{"x":1}`, "--replace"), cli.ExitBadInput, "")
		expect(t, run("", "put", "orders", "4", `{"total":2}`, "--replace"), 0, "stored orders/4\n")
		// Compare-and-set: a mismatch prints the current value.
		expect(t, run("", "put", "orders", "4", `{"total":5}`, "--expect", `{"total":1}`), cli.ExitConflict, `{"total":2}`+"\n")
		expect(t, run("", "put", "orders", "4", `{"total":5}`, "--expect", `{"total":2}`), 0, "stored orders/4\n")
		expect(t, run("", "put", "orders", "5", `[1,2]`), cli.ExitBadInput, "")
		expect(t, run("", "put", "orders", "5"), cli.ExitBadInput, "")
		expect(t, run("", "put", "nowhere", "5", `{}`), cli.ExitNotFound, "")

		expect(t, run("", "get", "orders", "1"), 0, "KEY  VALUE\n1    {\"total\":10.0,\"name\":\"a\"}\n")
		expect(t, run("", "get", "orders", "3", "-o", "json"), 0, `{"total":7,"name":"it's"}`+"\n")
		expect(t, run("", "get", "orders", "1,2", "4"), 0,
			"KEY  VALUE\n1    {\"total\":10.0,\"name\":\"a\"}\n2    {\"total\":3}\n4    {\"total\":5}\n")
		expect(t, run("", "get", "orders", "2", "9", "--ignore-missing", "-o", "json"), 0, `{"orders":[{"total":3},null]}`+"\n")
		expect(t, run("", "get", "orders", "2", "9", "--ignore-missing"), 0, "KEY  VALUE\n2    {\"total\":3}\n9    null\n")
		expect(t, run("", "get", "orders", "9"), cli.ExitNotFound, "")
		expect(t, run("", "get", "orders", "2,9"), cli.ExitBadInput, "")
		expect(t, run("", "get", "nowhere", "1"), cli.ExitNotFound, "")

		expect(t, run("", "keys", "orders"), 0, "KEY\n1\n2\n3\n4\n")
		expect(t, run("", "keys", "orders", "-o", "json"), 0, `{"keys":["1","2","3","4"]}`+"\n")
		expect(t, run("", "keys", "nowhere"), cli.ExitNotFound, "")
	})

	t.Run("query", func(t *testing.T) {
		expect(t, run("", "query", "SELECT o.total FROM /orders o WHERE o.total > $1 ORDER BY o.total", "--bind", "int:4"), 0,
			"RESULT\n5\n7\n10.0\n")
		expect(t, run("", "query", "SELECT o.name, o.total FROM /orders o WHERE o.total > $1 ORDER BY o.total", "-b", "int:5", "-o", "json"), 0,
			`[{"name":"it's","total":7},{"name":"a","total":10.0}]`+"\n")
		expect(t, run("", "query", "SELECT o.name, o.total FROM /orders o WHERE o.total > $1 ORDER BY o.total", "-b", "int:5"), 0,
			"name  total\nit's  7\na     10.0\n")
		// A string bind with a quote; a $1 inside a string literal stays text.
		expect(t, run("", "query", "SELECT o.total FROM /orders o WHERE o.name = $1 OR o.name = '$1'", "--bind", "string:it's"), 0,
			"RESULT\n7\n")
		expect(t, run("", "query", "SELECT o.total FROM /orders o WHERE o.total > 100"), 0, "(no results)\n")
		expect(t, run("", "query", "SELECT * FROM /orders o WHERE o.total > $2", "--bind", "int:1"), cli.ExitBadInput, "")
		expect(t, run("", "query", "SELECT * FROM /orders o", "--bind", "int:1"), cli.ExitBadInput, "")
		expect(t, run("", "query", "SELECT * FROM /orders o WHERE o.total > $1", "--bind", "int:x"), cli.ExitBadInput, "")
		expect(t, run("", "query", "SELECT * FROM /orders o WHERE o.total > $1", "--bind", "decimal:1"), cli.ExitBadInput, "")
		expect(t, run("", "query", "SELECT FROM"), cli.ExitFailure, "") // the API's 500
		expect(t, run("", "query"), cli.ExitBadInput, "")

		q := "SELECT o.total FROM /orders o WHERE o.total >= $1 ORDER BY o.total DESC LIMIT $2"
		expect(t, run("", "query", "create", "big", q), 0, "query big created\n")
		expect(t, run("", "query", "create", "big", "SELECT * FROM /orders o"), cli.ExitConflict,
			`{"id":"big","oql":"`+q+`"}`+"\n")
		expect(t, run("", "query", "create", "broken", "SELECT FROM"), cli.ExitBadInput, "")
		expect(t, run("", "query", "list"), 0, "ID   OQL\nbig  "+q+"\n")
		expect(t, run("", "query", "list", "-o", "json"), 0, `{"queries":[{"id":"big","oql":"`+q+`"}]}`+"\n")
		expect(t, run("", "query", "run", "big", "--bind", "double:3", "--bind", "int:2"), 0, "RESULT\n10.0\n7\n")
		expect(t, run("", "query", "run", "big", "-b", "double:3", "-b", "int:2", "-o", "json"), 0, "[10.0,7]\n")
		expect(t, run("", "query", "run", "big", "-b", "double:3"), cli.ExitFailure, "") // the API's 500: one bind short
		expect(t, run("", "query", "run", "nothing"), cli.ExitNotFound, "")
		expect(t, run("", "query", "update", "big", "SELECT o.total FROM /orders o WHERE o.total < $1 ORDER BY o.total"), 0, "query big updated\n")
		expect(t, run("", "query", "run", "big", "-b", "long:6"), 0, "RESULT\n3\n5\n")
		expect(t, run("", "query", "update", "nothing", "SELECT * FROM /orders o"), cli.ExitNotFound, "")
		expect(t, run("", "query", "create", "other", "SELECT * FROM /orders o", "-o", "json"), 0, "")
		expect(t, run("", "query", "delete", "other", "-o", "json"), 0, "")
		expect(t, run("", "query", "delete", "big"), 0, "query big deleted\n")
		expect(t, run("", "query", "delete", "big"), cli.ExitNotFound, "")
	})

	// An ad-hoc query's bind values are written into its text; a named
	// query's are bound by the server. Both must give the same answer.
	t.Run("binds as the server binds them", func(t *testing.T) {
		numeric := "SELECT $1 AS v, $1 / 2 AS half, 0 - $1 AS neg, $1 * 3 AS triple FROM /orders o WHERE o.total = 3"
		plain := "SELECT $1 AS v FROM /orders o WHERE o.total = 3 AND o.total <> 7 -- $2 is no parameter here"
		for i, tc := range []struct{ text, bind string }{
			{numeric, "int:5"}, {numeric, "int:-7"}, {numeric, "short:-3"}, {numeric, "byte:7"},
			{numeric, "long:5000000000"}, {numeric, "long:-9223372036854775808"}, {numeric, "long:9223372036854775807"},
			{numeric, "double:5"}, {numeric, "double:-2.5"}, {numeric, "double:1e21"}, {numeric, "double:0.1"},
			{numeric, "float:1.5"}, {numeric, "float:-0.1"}, {numeric, "float:3.4e38"},
			{plain, "string:it's"}, {plain, "string:$1 and ''"}, {plain, "string:"}, {plain, "boolean:true"}, {plain, "boolean:FALSE"},
			{plain, "java.lang.String:x"},
		} {
			id := "binds" + string(rune('a'+i))
			adhoc := run("", "query", tc.text, "--bind", tc.bind, "-o", "json")
			must(t, env, "", "query", "create", id, tc.text)
			named := run("", "query", "run", id, "--bind", tc.bind, "-o", "json")
			if adhoc.code != named.code || adhoc.out != named.out {
				t.Errorf("--bind %s: ad-hoc exit %d %q (%s), named exit %d %q (%s)", tc.bind, adhoc.code, adhoc.out, adhoc.err, named.code, named.out, named.err)
			}
			if adhoc.code != 0 || adhoc.out == "[]\n" {
				t.Errorf("--bind %s: exit %d, %q: the comparison shows nothing", tc.bind, adhoc.code, adhoc.out)
			}
		}
	})

	t.Run("function", func(t *testing.T) {
		out := must(t, env, "", "function", "list")
		if !strings.HasPrefix(out, "ID\n") {
			t.Errorf("function list: %s", out)
		}
		expect(t, run("", "function", "list", "-o", "json"), 0, `{"functions":["ClearRegion","GetAll","MemberInfo","RegionSize","SumField"]}`+"\n")
		for _, id := range []string{"ClearRegion", "GetAll", "MemberInfo", "RegionSize", "SumField"} {
			if !strings.Contains(out, "\n"+id+"\n") {
				t.Errorf("function list lacks %s:\n%s", id, out)
			}
		}
		expect(t, run("", "function", "run", "SumField", "--on-region", "orders", "--arg", "string:total"), 0, "RESULT\n25\n")
		must(t, env, "", "put", "events", "e1", `{"n":1}`)
		expect(t, run("", "function", "run", "GetAll", "--on-region", "events", "--filter", "e1,e9", "-o", "json"), 0, `[{"n":1},null]`+"\n")
		script := writeFile(t, dir, "twice.js", "function execute(ctx) { return ctx.args[0] * 2; }")
		expect(t, run("", "function", "deploy", "twice", script, "--permission", "DATA:READ"), 0, "function twice deployed\n")
		expect(t, run("", "function", "deploy", "twice", script, "--permission", "DATA:READ"), 0, "function twice replaced\n")
		// Without a target it runs on every member.
		expect(t, run("", "function", "run", "twice", "--arg", "int:21", "-o", "json"), 0, "[42,42,42]\n")
		expect(t, run("", "function", "run", "twice", "--arg", "int:21", "--on-members", "n2"), 0, "RESULT\n42\n")
		expect(t, run("", "function", "run", "twice", "--arg", "int:21", "--on-members", "n9"), cli.ExitNotFound, "")
		expect(t, run("", "function", "run", "twice", "--arg", `{"@type":"x","a":{"b":1}}`), cli.ExitBadInput, "")
		expect(t, run("", "function", "deploy", "broken", "-"), cli.ExitBadInput, "") // an empty script
		expect(t, run("function execute(ctx) { }", "function", "deploy", "quiet", "-", "--no-result", "-o", "json"), 0,
			`{"statusCode":"OK","statusMessage":"function quiet deployed"}`+"\n")
		expect(t, run("", "function", "run", "quiet"), 0, "(no result)\n")
		expect(t, run("", "function", "run", "quiet", "-o", "json"), 0, "")
		expect(t, run("", "function", "remove", "twice"), 0, "function twice removed\n")
		expect(t, run("", "function", "remove", "twice"), cli.ExitNotFound, "")
		expect(t, run("", "function", "run", "twice"), cli.ExitNotFound, "")
	})

	t.Run("index", func(t *testing.T) {
		expect(t, run("", "index", "create", "orders", "byTotal", "o.total"), 0, "index byTotal created on region orders\n")
		expect(t, run("", "index", "create", "orders", "byTotal", "o.total"), cli.ExitConflict,
			`{"name":"byTotal","expression":"o.total","from":"/orders o","region":"orders","path":["total"]}`+"\n")
		expect(t, run("", "index", "create", "orders", "byName", "name", "--from", "/orders"), 0, "index byName created on region orders\n")
		expect(t, run("", "index", "create", "orders", "bad", "total"), cli.ExitBadInput, "")
		expect(t, run("", "index", "list", "orders"), 0, "NAME     EXPRESSION  FROM\nbyName   name        /orders\nbyTotal  o.total     /orders o\n")
		expect(t, run("", "index", "drop", "orders", "byName", "-o", "json"), 0, `{"statusCode":"OK","statusMessage":"index byName deleted from region orders"}`+"\n")
		expect(t, run("", "index", "drop", "orders", "byName"), cli.ExitNotFound, "")
		expect(t, run("", "index", "list", "nowhere"), cli.ExitNotFound, "")
		expect(t, run("", "index", "list", "orders", "-o", "json"), 0,
			`{"statusCode":"OK","result":[{"name":"byTotal","expression":"o.total","from":"/orders o","region":"orders","path":["total"]}]}`+"\n")
	})

	t.Run("status", func(t *testing.T) {
		out := must(t, env, "", "status")
		for _, want := range []string{"MEMBER", "n1", "n2", "n3", "alive", "voter", "0 (control)", "REGION  TYPE       ENTRIES\n",
			"events  PARTITION  1\n", "orders  REPLICATE  4\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("status lacks %q:\n%s", want, out)
			}
		}
		var doc struct {
			Cluster struct {
				Leader  string `json:"leader"`
				Members []struct {
					Name string `json:"name"`
				} `json:"members"`
			} `json:"cluster"`
			Partitions struct {
				Groups []struct {
					Leader string `json:"leader"`
				} `json:"groups"`
			} `json:"partitions"`
			Regions []struct {
				Name    string `json:"name"`
				Type    string `json:"type"`
				Entries int    `json:"entries"`
			} `json:"regions"`
		}
		if err := json.Unmarshal([]byte(must(t, env, "", "status", "-o", "json")), &doc); err != nil {
			t.Fatalf("status -o json: %v", err)
		}
		if doc.Cluster.Leader == "" || len(doc.Cluster.Members) != 3 || len(doc.Partitions.Groups) != 4 {
			t.Errorf("status -o json: %+v, want a leader, 3 members and 4 partition groups", doc)
		}
		if len(doc.Regions) != 2 || doc.Regions[1].Name != "orders" || doc.Regions[1].Entries != 4 {
			t.Errorf("status -o json regions = %+v, want events and orders with 4 entries", doc.Regions)
		}
	})

	t.Run("delete", func(t *testing.T) {
		expect(t, run("", "delete", "orders", "1,2"), 0, "deleted orders/1,2\n")
		expect(t, run("", "delete", "events", "e1", "-o", "json"), 0, "")
		expect(t, run("", "delete", "orders", "1", "3"), cli.ExitNotFound, "") // all or nothing: 3 stays
		expect(t, run("", "keys", "orders"), 0, "KEY\n3\n4\n")
		expect(t, run("", "delete", "events", "--all"), cli.ExitBadInput, "") // the API's 405: partitioned
		expect(t, run("", "delete", "orders", "--all"), 0, "deleted every entry of orders\n")
		expect(t, run("", "delete", "orders"), cli.ExitBadInput, "")
		expect(t, run("", "keys", "orders", "-o", "json"), 0, `{"keys":[]}`+"\n")
	})

	t.Run("time-to-live", func(t *testing.T) {
		expect(t, run("", "region", "create", "sessions", "--ttl", "1m30s"), 0, "region sessions created\n")
		expect(t, run("", "region", "list"), 0,
			"NAME      TYPE       TTL\nevents    PARTITION  never\norders    REPLICATE  never\nsessions  REPLICATE  1m30s\n")
		expect(t, run("", "region", "alter", "sessions", "--ttl", "1s"), 0, "region sessions: entry time-to-live 1s\n")
		expect(t, run("", "region", "alter", "sessions", "--ttl", "0", "-o", "json"), 0,
			`{"statusCode":"OK","result":{"name":"sessions","type":"REPLICATE"}}`+"\n")
		expect(t, run("", "region", "alter", "sessions", "--ttl", "1s"), 0, "region sessions: entry time-to-live 1s\n")
		expect(t, run("", "region", "alter", "nowhere", "--ttl", "1s"), cli.ExitNotFound, "")
		expect(t, run("", "region", "alter", "sessions"), cli.ExitBadInput, "")
		expect(t, run("", "region", "alter", "sessions", "--ttl", "1500ms"), cli.ExitBadInput, "")
		expect(t, run("", "region", "create", "s2", "--ttl", "-1s"), cli.ExitBadInput, "")
		expect(t, run("", "put", "sessions", "k", `{"v":1}`, "--ttl", "87600h1s"), cli.ExitBadInput, "") // over ten years: the API's 400

		// k expires under the region's default, kept with --ttl 0; a
		// put-if-absent and a replace carry their own.
		expect(t, run("", "put", "sessions", "k", `{"v":1}`), 0, "stored sessions/k\n")
		expect(t, run("", "put", "sessions", "kept", `{"v":1}`, "--ttl", "1s"), 0, "stored sessions/kept\n")
		expect(t, run("", "put", "sessions", "kept", `{"v":2}`, "--replace", "--ttl", "0"), 0, "stored sessions/kept\n")
		expect(t, run("", "put", "sessions", "once", `{"v":1}`, "--if-absent", "--ttl", "2s"), 0, "stored sessions/once\n")
		waitfor.Cond(t, 20*time.Second, "sessions/k and sessions/once to expire", func() bool {
			return run("", "keys", "sessions").out == "KEY\nkept\n"
		})
		expect(t, run("", "get", "sessions", "k"), cli.ExitNotFound, "")
		expect(t, run("", "put", "sessions", "once", `{"v":2}`, "--if-absent"), 0, "stored sessions/once\n")
		expect(t, run("", "region", "destroy", "sessions"), 0, "region sessions deleted\n")
	})

	t.Run("failover", func(t *testing.T) {
		dead := "http://" + nodetest.FreeAddr(t)
		expect(t, kvnode(t, nil, "", "region", "list", "--url", dead, "--url", c.urls[1]), 0,
			"NAME    TYPE\nevents  PARTITION\norders  REPLICATE\n")
		r := kvnode(t, []string{"KVNODE_URL=" + dead + "," + nodetest.FreeAddr(t)}, "", "region", "list")
		if r.code != cli.ExitUnavailable || !strings.Contains(r.err, "no member reachable") {
			t.Errorf("every URL dead: exit %d, %s; want %d, no member reachable", r.code, r.err, cli.ExitUnavailable)
		}
		// A member that accepts but never answers: the request times out.
		silent, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer silent.Close()
		r = kvnode(t, nil, "", "region", "list", "--url", silent.Addr().String(), "--timeout", "300ms")
		if r.code != cli.ExitUnavailable {
			t.Errorf("a silent member: exit %d (%s), want %d", r.code, r.err, cli.ExitUnavailable)
		}
	})

	t.Run("command line", func(t *testing.T) {
		for _, args := range [][]string{
			{"get", "orders"}, {"keys"}, {"region"}, {"region", "frob"}, {"status", "extra"},
			{"keys", "orders", "-o", "yaml"}, {"keys", "orders", "--no-such-flag"},
			{"put", "orders", "1", "{}", "--replace", "--if-absent"}, {"delete", "orders", "1", "--all"},
			{"keys", "orders", "--url", "ftp://x"},
		} {
			if r := run("", args...); r.code != cli.ExitBadInput {
				t.Errorf("kvnode %s: exit %d (%s), want %d", strings.Join(args, " "), r.code, r.err, cli.ExitBadInput)
			}
		}
		// Shell completion asks the cluster for region names.
		if r := run("", "__complete", "get", ""); r.code != 0 || !strings.HasPrefix(r.out, "events\norders\n:") {
			t.Errorf("completing a region: exit %d (%s)\n%s", r.code, r.err, r.out)
		}
		// The output format from the environment, below the flag.
		jsonEnv := append([]string{"KVNODE_OUTPUT=json"}, env...)
		expect(t, kvnode(t, jsonEnv, "", "region", "list"), 0, `{"regions":[{"name":"events","type":"PARTITION"},{"name":"orders","type":"REPLICATE"}]}`+"\n")
		expect(t, kvnode(t, jsonEnv, "", "region", "list", "-o", "table"), 0, "NAME    TYPE\nevents  PARTITION\norders  REPLICATE\n")
	})
}
