package client_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// TestSecurity checks that the members' refusals reach a program as
// ErrUnauthorized (no credentials, wrong ones) and ErrForbidden (a user
// without the permission) through every handle. One member: every
// member checks the same security file, and the 3-member behaviour of
// each method is the other tests'.
func TestSecurity(t *testing.T) {
	hash := func(pw string) string {
		h, err := auth.HashPassword([]byte(pw))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	sec, err := json.Marshal(auth.File{
		Users: []auth.User{
			{Name: "admin", Password: hash("admin-pw"), Roles: []string{"admin"}},
			{Name: "app", Password: hash("app-pw"), Roles: []string{"app"}},
		},
		Roles: []auth.Role{
			{Name: "admin", Permissions: []string{"CLUSTER:MANAGE", "CLUSTER:READ", "DATA:MANAGE", "DATA:READ", "DATA:WRITE"}},
			{Name: "app", Permissions: []string{"DATA:READ", "DATA:WRITE"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "security.json")
	if err := os.WriteFile(path, sec, 0o600); err != nil {
		t.Fatal(err)
	}
	ip := nodetest.New(t)
	ip.Tune = func(_ string, cfg *node.Config) { cfg.SecurityFile = path }
	n := ip.Start("s", 1)
	as := func(user, password string) *client.Client {
		c, err := client.New(client.Config{Endpoints: []string{n.RESTURL()}, Username: user, Password: password})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	admin, app, nobody, wrong := as("admin", "admin-pw"), as("app", "app-pw"), as("", ""), as("app", "nope")
	waitfor.Cond(t, 20*time.Second, "a leader", func() bool {
		st, err := admin.Cluster().Status(ctx(t))
		return err == nil && st.Leader != ""
	})

	if err := admin.CreateRegion(ctx(t), client.RegionInfo{Name: "orders", Type: client.Replicate}); err != nil {
		t.Fatalf("CreateRegion as admin: %v", err)
	}
	if err := app.Queries().Create(ctx(t), "all", "SELECT * FROM /orders"); err != nil {
		t.Fatalf("Queries.Create as app: %v", err)
	}
	if rows, err := app.Query(ctx(t), "SELECT * FROM /orders o WHERE o.id = $1", 1); err != nil || len(rows) != 0 {
		t.Fatalf("Query as app = %s, %v", rows, err)
	}
	if err := nobody.Ping(ctx(t)); err != nil {
		t.Fatalf("Ping needs no credentials: %v", err)
	}
	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"Query without credentials", func() error { _, err := nobody.Query(ctx(t), "SELECT * FROM /orders"); return err }, client.ErrUnauthorized},
		{"Queries.List with a wrong password", func() error { _, err := wrong.Queries().List(ctx(t)); return err }, client.ErrUnauthorized},
		{"Functions.Run without credentials", func() error {
			_, err := nobody.Functions().Run(ctx(t), "MemberInfo", client.Target{})
			return err
		}, client.ErrUnauthorized},
		{"Cluster.Status without credentials", func() error { _, err := nobody.Cluster().Status(ctx(t)); return err }, client.ErrUnauthorized},
		{"Functions.Deploy as app", func() error {
			_, err := app.Functions().Deploy(ctx(t), client.Function{ID: "f", Source: "function execute() {}"})
			return err
		}, client.ErrForbidden},
		{"Functions.Run(MemberInfo: CLUSTER:READ) as app", func() error {
			_, err := app.Functions().Run(ctx(t), "MemberInfo", client.Target{})
			return err
		}, client.ErrForbidden},
		{"Indexes.List as app", func() error { _, err := app.Indexes("orders").List(ctx(t)); return err }, client.ErrForbidden},
		{"Servers as app", func() error { _, err := app.Servers(ctx(t)); return err }, client.ErrForbidden},
		{"Cluster.Status as app", func() error { _, err := app.Cluster().Status(ctx(t)); return err }, client.ErrForbidden},
		{"Cluster.Rebalance as app", func() error { _, err := app.Cluster().Rebalance(ctx(t)); return err }, client.ErrForbidden},
		{"Cluster.Backup as app", func() error { _, err := app.Cluster().Backup(ctx(t)); return err }, client.ErrForbidden},
	} {
		if err := tc.call(); !errors.Is(err, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, err, tc.want)
		}
	}
	if st, err := admin.Cluster().Status(ctx(t)); err != nil || st.Leader != "s" {
		t.Errorf("Cluster.Status as admin = %+v, %v", st, err)
	}
}
