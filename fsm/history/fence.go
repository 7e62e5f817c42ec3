package history

import (
	"encoding/json"
	"strconv"

	"github.com/kvnode/kvnode/region"
)

// Fence is the type of the event a partition group records when it
// adopts a bucket that moved in from another group. A watch reads each
// group on its own, so a watch that lags behind on the source could
// otherwise deliver a key's first event from its new group before its
// last ones from the old: a reader that meets a fence holds its group's
// later events until the watch has read the source past the release.
// Fences belong to no region: every watch of the group reads them (Events
// returns them whatever region is asked for), none delivers them.
const Fence region.EventType = "fence"

// FenceInfo is what a fence says: bucket Bucket came from group From,
// which released it at log index Release.
type FenceInfo struct {
	Bucket  uint64 `json:"bucket"`
	From    uint64 `json:"from"`
	Release uint64 `json:"release"`
}

// After is the source's position a watch must have read past before the
// events after the fence: after everything entry Release did.
func (f FenceInfo) After() Pos { return Pos{Index: f.Release + 1} }

// NewFence is the fence event of f.
func NewFence(f FenceInfo) Event {
	v := strconv.AppendUint([]byte(`{"bucket":`), f.Bucket, 10)
	v = strconv.AppendUint(append(v, `,"from":`...), f.From, 10)
	v = strconv.AppendUint(append(v, `,"release":`...), f.Release, 10)
	return Event{Type: Fence, Value: append(v, '}')}
}

// FenceOf reads a fence event; ok is false for any other event (or a
// fence whose value does not parse, which no build writes).
func FenceOf(e Event) (f FenceInfo, ok bool) {
	if e.Type != Fence {
		return FenceInfo{}, false
	}
	if err := json.Unmarshal(e.Value, &f); err != nil || f.From == 0 {
		return FenceInfo{}, false
	}
	return f, true
}
