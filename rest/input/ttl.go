package input

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kvnode/kvnode/region"
)

// Entry time-to-live, as a client gives it: whole seconds, from 0 (never
// expires) to region.MaxTTL, in ?ttl= of a write and in a region's
// entryTimeToLive (or Geode's expirations list).

// maxTTLSeconds is region.MaxTTL in the unit clients use.
const maxTTLSeconds = int64(region.MaxTTL / time.Second)

// seconds reads a time-to-live in whole seconds; what names it in the
// refusal, which shows s as shown.
func seconds(what, s, shown string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > maxTTLSeconds {
		if shown == "" {
			shown = "(missing)"
		}
		return 0, fmt.Errorf("%w: %s %s is not a whole number of seconds from 0 (never expires) to %d (ten years)", region.ErrInvalid, what, shown, maxTTLSeconds)
	}
	return n, nil
}

// ParseTTL reads ?ttl= of a write: absent is the region's default (the
// zero TTL); present, seconds from this write, 0 meaning never.
func ParseTTL(s string, present bool) (region.TTL, error) {
	if !present {
		return region.TTL{}, nil
	}
	n, err := seconds("ttl", s, strconv.Quote(s))
	if err != nil {
		return region.TTL{}, err
	}
	return region.TTL{Duration: time.Duration(n) * time.Second, Set: true}, nil
}

// ParseEntryTimeToLive reads the body of PATCH /management/v1/regions/{name},
// {"entryTimeToLive":30}: the region's new default, in seconds.
func ParseEntryTimeToLive(body []byte) (time.Duration, error) {
	var patch struct {
		EntryTimeToLive json.RawMessage `json:"entryTimeToLive"`
	}
	if err := decodeObject(body, &patch, `a region change is {"entryTimeToLive":SECONDS}`, "region change"); err != nil {
		return 0, err
	}
	if patch.EntryTimeToLive == nil {
		return 0, fmt.Errorf(`%w: a region change is {"entryTimeToLive":SECONDS}: entryTimeToLive is missing`, region.ErrInvalid)
	}
	n, err := seconds("entryTimeToLive", string(patch.EntryTimeToLive), string(patch.EntryTimeToLive))
	return time.Duration(n) * time.Second, err
}

// expiration is one element of Geode's "expirations" list.
type expiration struct {
	Type          string          `json:"type"`
	TimeInSeconds json.RawMessage `json:"timeInSeconds"`
	Action        string          `json:"action"`
}

// regionTTL is the entryTimeToLive of a region being created, in seconds,
// from kvnode's member or Geode's list (one of them, not both). Of Geode's
// expirations kvnode has only entry time-to-live with the action DESTROY:
// anything else is refused, since a region that silently ignored an idle
// timeout or an invalidation would keep entries its client expects gone.
func regionTTL(ttl json.RawMessage, exps []expiration) (int64, error) {
	if ttl != nil && len(exps) > 0 {
		return 0, fmt.Errorf("%w: give entryTimeToLive or expirations, not both", region.ErrInvalid)
	}
	if ttl != nil {
		return seconds("entryTimeToLive", string(ttl), string(ttl))
	}
	var n int64
	for i, e := range exps {
		if !strings.EqualFold(e.Type, "ENTRY_TIME_TO_LIVE") || !strings.EqualFold(e.Action, "DESTROY") {
			return 0, fmt.Errorf(`%w: expirations[%d] is %s with action %s; kvnode supports only {"type":"ENTRY_TIME_TO_LIVE","timeInSeconds":N,"action":"DESTROY"}`, region.ErrInvalid, i, e.Type, e.Action)
		}
		if i > 0 {
			return 0, fmt.Errorf("%w: expirations has more than one ENTRY_TIME_TO_LIVE", region.ErrInvalid)
		}
		var err error
		if n, err = seconds(fmt.Sprintf("expirations[%d].timeInSeconds", i), string(e.TimeInSeconds), string(e.TimeInSeconds)); err != nil {
			return 0, err
		}
	}
	return n, nil
}
