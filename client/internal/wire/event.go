package wire

import (
	"bytes"
	"encoding/json"

	"github.com/kvnode/kvnode/client/internal/jsonscan"
)

// EventDoc is the data of one event of a watch (GET /kv/v1/watch): the
// members write {"type", "region", "key", "value"} for a change and
// {"type", "cause", "token"} for an error or an end.
type EventDoc struct {
	Type, Region, Key string
	Value             json.RawMessage // a slice of the data decoded
	Cause, Token      string
}

// EventDecoder decodes the events of one watch. It keeps the last region
// name it read, so that a stream of one region's changes allocates the
// key and nothing else per event.
type EventDecoder struct {
	typ, region string
}

// Decode reads data, an event's JSON object, in one pass without
// reflection (jsonscan); a document jsonscan leaves to encoding/json (an
// escape in a name or a string, bytes that are not UTF-8, not an object
// at all) is decoded by encoding/json, which gives the same answer or the
// error. Value is a slice of data.
func (d *EventDecoder) Decode(data []byte) (EventDoc, error) {
	var doc EventDoc
	plain := true
	text := func(value []byte) ([]byte, bool) {
		t, ok := jsonscan.String(value)
		plain = plain && ok
		return t, ok
	}
	if jsonscan.Object(data, func(name, value []byte) {
		switch string(name) {
		case "type":
			if t, ok := text(value); ok {
				doc.Type = intern(&d.typ, t)
			}
		case "region":
			if t, ok := text(value); ok {
				doc.Region = intern(&d.region, t)
			}
		case "key":
			if t, ok := text(value); ok {
				doc.Key = string(t)
			}
		case "value":
			doc.Value = value
		case "cause":
			if t, ok := text(value); ok {
				doc.Cause = string(t)
			}
		case "token":
			if t, ok := text(value); ok {
				doc.Token = string(t)
			}
		default:
			// encoding/json matches names regardless of case: leave
			// such a document to it.
			for _, n := range [...]string{"type", "region", "key", "value", "cause", "token"} {
				if bytes.EqualFold(name, []byte(n)) {
					plain = false
				}
			}
		}
	}) && plain {
		return doc, nil
	}
	var slow struct {
		Type, Region, Key string
		Value             json.RawMessage
		Cause, Token      string
	}
	if err := json.Unmarshal(data, &slow); err != nil {
		return EventDoc{}, err
	}
	return EventDoc(slow), nil
}

// intern is b as a string: *last when it is the same (an event's type and
// region repeat from one event to the next), else a new one kept in *last.
func intern(last *string, b []byte) string {
	if string(b) != *last {
		*last = string(b)
	}
	return *last
}
