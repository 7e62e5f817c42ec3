package catalog

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/kvnode/kvnode/index"
	"github.com/kvnode/kvnode/region"
)

// Index definitions live in the control group's metadata too, under
// IndexPrefix + region + "/" + name, as the JSON of a region.IndexInfo, so
// every member sees the same set. Their key layout and decoding are here;
// creating and deleting them is the regions' (package store/regions:
// the region must exist, and a create waits for the builds), installing
// them into every local state machine is the store's.

// IndexPrefix is where index definitions live among the metadata.
const IndexPrefix = "index/"

// IndexKey is the metadata key of index name on region regionName.
func IndexKey(regionName, name string) string {
	return IndexPrefix + regionName + "/" + name
}

// RegionIndexPrefix is the prefix of every index definition of a region.
func RegionIndexPrefix(regionName string) string {
	return IndexPrefix + regionName + "/"
}

// DecodeIndex decodes one definition as stored.
func DecodeIndex(e Entry) (region.IndexInfo, error) {
	var def region.IndexInfo
	if err := json.Unmarshal(e.Value, &def); err != nil {
		return def, fmt.Errorf("index definition %s: %w", e.Key, err)
	}
	return def, nil
}

// IndexSet is every index definition, by region, as state machines take
// them (fsm.SetIndexes), with a version that any create or delete changes:
// a hash of the definitions' keys and versions, never 0 (the version of
// "nothing set yet"). Definitions that do not decode are returned in Bad
// and left out.
type IndexSet struct {
	Version uint64
	Defs    map[string][]index.Def
	Bad     []error
}

// Indexes builds the IndexSet of entries, every key under IndexPrefix.
func Indexes(entries []Entry) IndexSet {
	h := fnv.New64a()
	set := IndexSet{Defs: map[string][]index.Def{}}
	for _, e := range entries {
		h.Write([]byte(e.Key + "@" + strconv.FormatUint(e.Version, 10) + ";"))
		def, err := DecodeIndex(e)
		if err != nil {
			set.Bad = append(set.Bad, err)
			continue
		}
		set.Defs[def.Region] = append(set.Defs[def.Region], index.Def{Name: def.Name, Path: def.Path})
	}
	set.Version = h.Sum64() | 1
	return set
}
