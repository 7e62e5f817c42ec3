package client_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kvnode/kvnode/backup/archive"
	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/waitfor"
)

// TestClusterOps reads the cluster's status and partition table, runs
// rebalances to their end, takes backups and removes a member, with each
// error, on a real 3-member cluster. Removing a member comes last: the
// cluster has two afterwards.
func TestClusterOps(t *testing.T) {
	tc := startCluster(t, 3, nil)
	c, cl := tc.c, tc.c.Cluster()
	if err := c.CreateRegion(ctx(t), client.RegionInfo{Name: "events", Type: client.Partition}); err != nil {
		t.Fatal(err)
	}
	var entries []client.Entry
	for i := range 50 {
		entries = append(entries, client.Entry{Key: string(rune('a'+i%26)) + string(rune('a'+i/26)), Value: map[string]int{"i": i}})
	}
	if err := c.Region("events").PutAll(ctx(t), entries); err != nil {
		t.Fatal(err)
	}

	t.Run("status", func(t *testing.T) {
		if err := c.Ping(ctx(t)); err != nil {
			t.Fatalf("Ping: %v", err)
		}
		var want []string
		for _, name := range tc.names {
			want = append(want, tc.Nodes[name].RESTURL())
		}
		slices.Sort(want)
		urls, err := c.Servers(ctx(t))
		if err != nil || !slices.Equal(urls, want) {
			t.Fatalf("Servers = %v, %v; want %v", urls, err, want)
		}
		st, err := cl.Status(ctx(t))
		if err != nil || !slices.Contains(tc.names, st.Leader) || st.Term == 0 || len(st.Members) != 3 {
			t.Fatalf("Status = %+v, %v", st, err)
		}
		for _, m := range st.Members {
			if m.Status != "alive" || m.Suffrage != "voter" || m.RESTURL == "" || m.Groups == nil {
				t.Errorf("member %+v: want alive, a voter, with its URL", m)
			}
		}
		p, err := cl.Partitions(ctx(t))
		if err != nil || p.PartitionGroups == 0 || len(p.Groups) != p.PartitionGroups || p.ReplicationFactor != 3 || p.Buckets == 0 {
			t.Fatalf("Partitions = %+v, %v", p, err)
		}
		buckets := 0
		for _, g := range p.Groups {
			buckets += len(g.Buckets)
			if g.Leader == "" || len(g.Voters) != 3 {
				t.Errorf("group %+v: want a leader and 3 voters", g)
			}
		}
		if buckets != p.Buckets {
			t.Errorf("the groups own %d buckets of %d", buckets, p.Buckets)
		}
	})

	t.Run("rebalance", func(t *testing.T) {
		id, err := cl.Rebalance(ctx(t))
		if err != nil || id == "" {
			t.Fatalf("Rebalance = %q, %v", id, err)
		}
		op, err := cl.Wait(ctx(t), id)
		if err != nil || op.ID != id || op.Status != client.OperationSucceeded || op.End.IsZero() || op.Start.IsZero() {
			t.Fatalf("Wait = %+v, %v", op, err)
		}
		before, err := cl.Partitions(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.GrowPartitions(ctx(t), before.PartitionGroups-1); !errors.Is(err, client.ErrInvalid) {
			t.Fatalf("GrowPartitions(fewer) = %v, want ErrInvalid", err)
		}
		grow, err := cl.GrowPartitions(ctx(t), before.PartitionGroups+1)
		if err != nil {
			t.Fatalf("GrowPartitions: %v", err)
		}
		op, err = cl.Wait(ctx(t), grow)
		if err != nil || op.Result.PartitionGroups != before.PartitionGroups+1 {
			t.Fatalf("Wait(grow) = %+v, %v", op, err)
		}
		if after, err := cl.Partitions(ctx(t)); err != nil || after.PartitionGroups != before.PartitionGroups+1 {
			t.Fatalf("Partitions after growing = %+v, %v", after, err)
		}
		if n, err := c.Region("events").Count(ctx(t)); err != nil || n != len(entries) {
			t.Fatalf("Count after growing = %d, %v; want %d", n, err, len(entries))
		}
		ops, err := cl.Operations(ctx(t))
		// The members may have started rebalances of their own.
		ids := func() (out []string) {
			for _, op := range ops {
				out = append(out, op.ID)
			}
			return out
		}
		if err != nil || !slices.Contains(ids(), id) || ops[len(ops)-1].ID != grow {
			t.Fatalf("Operations = %+v, %v", ops, err)
		}
		if _, err := cl.Operation(ctx(t), "nope"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("Operation(nope) = %v, want ErrNotFound", err)
		}
		short, cancel := context.WithCancel(ctx(t))
		cancel()
		if _, err := cl.Wait(short, id); !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait with a cancelled context = %v", err)
		}
	})

	t.Run("backup", func(t *testing.T) {
		var buf bytes.Buffer
		n, err := cl.BackupTo(ctx(t), &buf)
		if err != nil || n == 0 || n != int64(buf.Len()) {
			t.Fatalf("BackupTo = %d, %v (%d bytes written)", n, err, buf.Len())
		}
		m, _, err := archive.Verify(&buf)
		if err != nil || len(m.Regions) != 1 {
			t.Fatalf("the backup: %+v, %v", m, err)
		}
		rc, err := cl.Backup(ctx(t))
		if err != nil {
			t.Fatalf("Backup: %v", err)
		}
		defer rc.Close()
		if _, _, err := archive.Verify(rc); err != nil {
			t.Fatalf("the streamed backup: %v", err)
		}
	})

	t.Run("remove member", func(t *testing.T) {
		// One endpoint, no routing: the member asked is m1, which may not
		// remove itself (ErrInvalid) but may remove the others.
		m1, err := client.New(client.Config{Endpoints: []string{tc.Nodes["m1"].RESTURL()}, DisableSingleHop: true})
		if err != nil {
			t.Fatal(err)
		}
		defer m1.Close()
		if err := m1.Cluster().RemoveMember(ctx(t), "nobody"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("RemoveMember(nobody) = %v, want ErrNotFound", err)
		}
		if err := m1.Cluster().RemoveMember(ctx(t), "m3"); !errors.Is(err, client.ErrConflict) {
			t.Fatalf("RemoveMember(m3 alive) = %v, want ErrConflict", err)
		}
		if err := m1.Cluster().RemoveMember(ctx(t), "m1"); !errors.Is(err, client.ErrInvalid) {
			t.Fatalf("RemoveMember(itself) = %v, want ErrInvalid", err)
		}
		tc.Stop("m3", false)
		waitfor.Cond(t, 30*time.Second, "gossip to see m3 failed and its removal accepted", func() bool {
			err := m1.Cluster().RemoveMember(ctx(t), "m3")
			if err != nil && !errors.Is(err, client.ErrConflict) {
				t.Fatalf("RemoveMember(m3 stopped) = %v", err)
			}
			return err == nil
		})
		st, err := m1.Cluster().Status(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range st.Members {
			if m.Name == "m3" && m.Suffrage != "" {
				t.Fatalf("m3 after its removal: %+v", m)
			}
		}
	})
}
