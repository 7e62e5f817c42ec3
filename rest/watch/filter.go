package watch

import (
	"encoding/json"
	"strings"

	"github.com/kvnode/kvnode/region"
)

// filter decides which events a client receives and, for a continuous
// query, what each change means for the query's result.
type filter struct {
	keys   map[string]bool // keys=, nil when absent
	prefix string          // prefix=, "" matches every key
	cq     Matcher         // nil without q or query
}

func newFilter(r *request, cq Matcher) *filter {
	f := &filter{prefix: r.prefix, cq: cq}
	if r.keys != nil {
		f.keys = make(map[string]bool, len(r.keys))
		for _, k := range r.keys {
			f.keys[k] = true
		}
	}
	return f
}

// wants reports whether key passes keys= and prefix=.
func (f *filter) wants(key string) bool {
	if f.keys != nil {
		return f.keys[key]
	}
	return strings.HasPrefix(key, f.prefix)
}

// apply returns the event the client receives for e, and false when it
// receives none. A clear always passes: it concerns every key and every
// query's result.
func (f *filter) apply(e region.Event) (region.Event, bool) {
	if e.Type == region.EventClear {
		return e, true
	}
	if !f.wants(e.Key) {
		return e, false
	}
	if f.cq == nil {
		return e, true
	}
	was := e.Type != region.EventCreate && e.Type != region.EventInitial && f.matches(e.Key, e.Old)
	now := (e.Type == region.EventCreate || e.Type == region.EventUpdate || e.Type == region.EventInitial) && f.matches(e.Key, e.Value)
	out := region.Event{Type: e.Type, Key: e.Key, Token: e.Token}
	switch {
	case e.Type == region.EventInitial:
		if !now {
			return e, false
		}
		out.Value = e.Value
	case !was && now:
		out.Type, out.Value = region.EventCreate, e.Value
	case was && now:
		out.Type, out.Value = region.EventUpdate, e.Value
	case was && !now:
		// Stops matching, is destroyed, or expires: it leaves the result.
		out.Type = region.EventDestroy
	default:
		return e, false
	}
	return out, true
}

// matches is the query's verdict on one value; an entry that was absent
// (nil) or that the query cannot evaluate does not match (see doc.go).
func (f *filter) matches(key string, value json.RawMessage) bool {
	if value == nil {
		return false
	}
	ok, err := f.cq.Matches(key, value)
	return err == nil && ok
}
