package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/kvnode/kvnode/client"
)

// regionSize is a region of GET /kv/v1 with its entry count (HEAD).
type regionSize struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Entries int    `json:"entries"`
}

// statusDoc is status's -o json: the two management answers as they came,
// and the regions with their sizes.
type statusDoc struct {
	Cluster    json.RawMessage `json:"cluster"`
	Partitions json.RawMessage `json:"partitions"`
	Regions    []regionSize    `json:"regions"`
}

func newStatusCmd(a *app) *cobra.Command {
	return a.command("status", "Members, Raft groups and their leaders, regions and their sizes", `
Show the cluster as the member asked sees it: every member (gossip status,
Raft suffrage, REST URL; a member that has not proved its identity over the
internal port shows as refused or unverified, with the reason below the
table), the control group and every partition group with its leader, and
every region with its number of entries.

It reads /management/v1/cluster and /management/v1/partitions (permission
CLUSTER:MANAGE when security is on), /kv/v1 and a HEAD of each region
(DATA:READ). With -o json: {"cluster":...,"partitions":...,"regions":[...]},
the first two as the API answered them.`, cobra.NoArgs, func(s *session, _ []string) error {
		cl, err := s.Cluster().Status(s.ctx)
		if err != nil {
			return err
		}
		doc := statusDoc{Cluster: s.answer.Body}
		pt, err := s.Cluster().Partitions(s.ctx)
		if err != nil {
			return err
		}
		doc.Partitions = s.answer.Body
		if doc.Regions, err = regionSizes(s); err != nil {
			return err
		}
		if s.p.json {
			return s.p.doc(doc)
		}
		return statusTable(s.p, cl, pt, doc.Regions)
	})
}

// regionSizes lists the regions and counts each one's entries.
func regionSizes(s *session) ([]regionSize, error) {
	regions, err := s.Regions(s.ctx)
	if err != nil {
		return nil, err
	}
	sizes := make([]regionSize, len(regions))
	for i, r := range regions {
		sizes[i] = regionSize{Name: r.Name, Type: r.Type}
		if sizes[i].Entries, err = s.Region(r.Name).Count(s.ctx); err != nil {
			return nil, err
		}
	}
	return sizes, nil
}

// statusTable prints the cluster, its groups and its regions as tables.
func statusTable(p printer, cv *client.ClusterStatus, pv *client.Partitions, regions []regionSize) error {
	fmt.Fprintf(p.out, "Leader %s, term %d; %d partition groups, replication factor %d\n\n",
		orDash(cv.Leader), cv.Term, pv.PartitionGroups, pv.ReplicationFactor)

	t := render.NewTable(p.out, "MEMBER", "STATUS", "SUFFRAGE", "REST URL", "GROUPS", "VERSION")
	var inControl, refused []string
	for _, m := range cv.Members {
		suffrage := m.Suffrage
		if m.Identity == "refused" || m.Identity == "unverified" {
			// Not proved over the internal port: in no Raft group.
			suffrage = m.Identity
			refused = append(refused, fmt.Sprintf("%s is %s: %s", m.Name, m.Identity, m.Reason))
		}
		t.Row(m.Name, m.Status, suffrage, m.RESTURL, strings.Join(m.Groups, ","), m.Version)
		if m.Suffrage != "" {
			inControl = append(inControl, m.Name)
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	for _, line := range refused {
		fmt.Fprintln(p.out, line)
	}
	fmt.Fprintln(p.out)

	t = render.NewTable(p.out, "GROUP", "LEADER", "TERM", "MEMBERS", "BUCKETS")
	t.Row("0 (control)", cv.Leader, strconv.FormatUint(cv.Term, 10), strings.Join(inControl, ","), "")
	for _, g := range pv.Groups {
		term := ""
		if g.Leader != "" {
			term = strconv.FormatUint(g.Term, 10)
		}
		t.Row(strconv.FormatUint(g.Group, 10), g.Leader, term, strings.Join(g.Members, ","), strconv.Itoa(len(g.Buckets)))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(p.out)

	t = render.NewTable(p.out, "REGION", "TYPE", "ENTRIES")
	for _, r := range regions {
		t.Row(r.Name, r.Type, strconv.Itoa(r.Entries))
	}
	return t.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
