package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/spf13/cobra"
)

// clusterView is the part of GET /management/v1/cluster the table shows.
type clusterView struct {
	Leader  string `json:"leader"`
	Term    uint64 `json:"term"`
	Members []struct {
		Name     string   `json:"name"`
		RESTURL  string   `json:"restUrl"`
		Groups   []string `json:"groups"`
		Version  string   `json:"version"`
		Status   string   `json:"status"`
		Suffrage string   `json:"suffrage"`
		Identity string   `json:"identity"`
		Reason   string   `json:"reason"`
	} `json:"members"`
}

// partitionsView is the part of GET /management/v1/partitions the table
// shows.
type partitionsView struct {
	PartitionGroups   int `json:"partitionGroups"`
	ReplicationFactor int `json:"replicationFactor"`
	Groups            []struct {
		Group   uint64   `json:"group"`
		Buckets []int    `json:"buckets"`
		Members []string `json:"members"`
		Leader  string   `json:"leader"`
		Term    uint64   `json:"term"`
	} `json:"groups"`
}

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
	return legacyCommand("status", "Members, Raft groups and their leaders, regions and their sizes", `
Show the cluster as the member asked sees it: every member (gossip status,
Raft suffrage, REST URL; a member that has not proved its identity over the
internal port shows as refused or unverified, with the reason below the
table), the control group and every partition group with its leader, and
every region with its number of entries.

It reads /management/v1/cluster and /management/v1/partitions (permission
CLUSTER:MANAGE when security is on), /kv/v1 and a HEAD of each region
(DATA:READ). With -o json: {"cluster":...,"partitions":...,"regions":[...]},
the first two as the API answered them.`, cobra.NoArgs, func(cmd *cobra.Command, _ []string) error {
		get := func(path string) ([]byte, error) {
			resp, err := a.call(cmd, request{Method: http.MethodGet, Path: path})
			if err != nil {
				return nil, err
			}
			return resp.Body, nil
		}
		var doc statusDoc
		var err error
		if doc.Cluster, err = get("/management/v1/cluster"); err != nil {
			return err
		}
		if doc.Partitions, err = get("/management/v1/partitions"); err != nil {
			return err
		}
		if doc.Regions, err = regionSizes(a, cmd); err != nil {
			return err
		}
		p := a.printer(cmd)
		if p.json {
			return p.doc(doc)
		}
		return statusTable(p, doc)
	})
}

// regionSizes lists the regions and counts each one's entries.
func regionSizes(a *app, cmd *cobra.Command) ([]regionSize, error) {
	resp, err := a.call(cmd, request{Method: http.MethodGet, Path: "/kv/v1"})
	if err != nil {
		return nil, err
	}
	var list struct {
		Regions []regionSize `json:"regions"`
	}
	if err := decode(resp.Body, &list, "GET /kv/v1"); err != nil {
		return nil, err
	}
	for i := range list.Regions {
		r := &list.Regions[i]
		path := "/kv/v1/" + seg(r.Name)
		head, err := a.call(cmd, request{Method: http.MethodHead, Path: path})
		if err != nil {
			return nil, err
		}
		if r.Entries, err = strconv.Atoi(head.Header.Get("Resource-Count")); err != nil {
			return nil, fmt.Errorf("HEAD %s: Resource-Count %q: %w", path, head.Header.Get("Resource-Count"), err)
		}
	}
	if list.Regions == nil {
		list.Regions = []regionSize{}
	}
	return list.Regions, nil
}

// statusTable prints the cluster, its groups and its regions as tables.
func statusTable(p printer, doc statusDoc) error {
	var cv clusterView
	if err := decode(doc.Cluster, &cv, "GET /management/v1/cluster"); err != nil {
		return err
	}
	var pv partitionsView
	if err := decode(doc.Partitions, &pv, "GET /management/v1/partitions"); err != nil {
		return err
	}
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
	for _, r := range doc.Regions {
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
