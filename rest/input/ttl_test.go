package input

import (
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
)

// TestParseTTL: ?ttl= is whole seconds from 0 to ten years; absent is the
// region's default, 0 is never.
func TestParseTTL(t *testing.T) {
	got, err := ParseTTL("", false)
	checkErr(t, err, "")
	if got != (region.TTL{}) {
		t.Errorf("absent: got %+v, want the zero TTL (the region's default)", got)
	}
	for s, want := range map[string]time.Duration{"0": 0, "1": time.Second, "3600": time.Hour, "315360000": region.MaxTTL} {
		got, err := ParseTTL(s, true)
		checkErr(t, err, "")
		if got != (region.TTL{Duration: want, Set: true}) {
			t.Errorf("ttl=%s: got %+v, want %v, set", s, got, want)
		}
	}
	for _, s := range []string{"", "-1", "1.5", "1s", "abc", "315360001", "99999999999999999999", " 1"} {
		_, err := ParseTTL(s, true)
		checkErr(t, err, `invalid request: ttl "`+s+`" is not a whole number of seconds from 0 (never expires) to 315360000 (ten years)`)
	}
}

// TestRegionTimeToLive: a region's entryTimeToLive in kvnode's shape and in
// Geode's, and every refusal.
func TestRegionTimeToLive(t *testing.T) {
	for body, want := range map[string]int64{
		`{"name":"s","type":"REPLICATE"}`:                      0,
		`{"name":"s","type":"REPLICATE","entryTimeToLive":60}`: 60,
		`{"name":"s","type":"PARTITION","entryTimeToLive":0}`:  0,
		`{"name":"s","type":"REPLICATE","expirations":[{"type":"ENTRY_TIME_TO_LIVE","timeInSeconds":30,"action":"DESTROY"}]}`: 30,
		`{"name":"s","type":"REPLICATE","expiration":[{"type":"entry_time_to_live","timeInSeconds":7,"action":"destroy"}]}`:   7,
		`{"name":"s","type":"REPLICATE","expirations":[]}`:                                                                    0,
	} {
		info, err := ParseRegionConfig([]byte(body))
		checkErr(t, err, "")
		if info.EntryTimeToLive != want {
			t.Errorf("%s: got entryTimeToLive %d, want %d", body, info.EntryTimeToLive, want)
		}
	}
	const supported = `kvnode supports only {"type":"ENTRY_TIME_TO_LIVE","timeInSeconds":N,"action":"DESTROY"}`
	for body, want := range map[string]string{
		`{"name":"s","type":"REPLICATE","entryTimeToLive":-1}`:                                                                                                                                  "invalid request: entryTimeToLive -1 is not a whole number of seconds from 0 (never expires) to 315360000 (ten years)",
		`{"name":"s","type":"REPLICATE","entryTimeToLive":1.5}`:                                                                                                                                 "invalid request: entryTimeToLive 1.5 is not a whole number of seconds from 0 (never expires) to 315360000 (ten years)",
		`{"name":"s","type":"REPLICATE","entryTimeToLive":"60"}`:                                                                                                                                `invalid request: entryTimeToLive "60" is not a whole number of seconds from 0 (never expires) to 315360000 (ten years)`,
		`{"name":"s","type":"REPLICATE","entryTimeToLive":1e20}`:                                                                                                                                "invalid request: entryTimeToLive 1e20 is not a whole number of seconds from 0 (never expires) to 315360000 (ten years)",
		`{"name":"s","type":"REPLICATE","entryTimeToLive":1,"expirations":[{"type":"ENTRY_TIME_TO_LIVE","timeInSeconds":1,"action":"DESTROY"}]}`:                                                "invalid request: give entryTimeToLive or expirations, not both",
		`{"name":"s","type":"REPLICATE","expirations":[{"type":"ENTRY_IDLE_TIME","timeInSeconds":1,"action":"DESTROY"}]}`:                                                                       "invalid request: expirations[0] is ENTRY_IDLE_TIME with action DESTROY; " + supported,
		`{"name":"s","type":"REPLICATE","expirations":[{"type":"ENTRY_TIME_TO_LIVE","timeInSeconds":1,"action":"INVALIDATE"}]}`:                                                                 "invalid request: expirations[0] is ENTRY_TIME_TO_LIVE with action INVALIDATE; " + supported,
		`{"name":"s","type":"REPLICATE","expirations":[{"type":"ENTRY_TIME_TO_LIVE","timeInSeconds":-5,"action":"DESTROY"}]}`:                                                                   "invalid request: expirations[0].timeInSeconds -5 is not a whole number of seconds from 0 (never expires) to 315360000 (ten years)",
		`{"name":"s","type":"REPLICATE","expirations":[{"type":"ENTRY_TIME_TO_LIVE","timeInSeconds":1,"action":"DESTROY"},{"type":"ENTRY_TIME_TO_LIVE","timeInSeconds":2,"action":"DESTROY"}]}`: "invalid request: expirations has more than one ENTRY_TIME_TO_LIVE",
	} {
		_, err := ParseRegionConfig([]byte(body))
		checkErr(t, err, want)
	}
}

// TestParseEntryTimeToLive: the body of a region change.
func TestParseEntryTimeToLive(t *testing.T) {
	got, err := ParseEntryTimeToLive([]byte(`{"entryTimeToLive":30}`))
	checkErr(t, err, "")
	if got != 30*time.Second {
		t.Errorf("got %v, want 30s", got)
	}
	for body, want := range map[string]string{
		`{}`:                          `invalid request: a region change is {"entryTimeToLive":SECONDS}: entryTimeToLive is missing`,
		`{"entryTimeToLive":-3}`:      "invalid request: entryTimeToLive -3 is not a whole number of seconds from 0 (never expires) to 315360000 (ten years)",
		`{"entryTimeToLive":null}`:    "invalid request: entryTimeToLive null is not a whole number of seconds from 0 (never expires) to 315360000 (ten years)",
		`{"entryTimeToLive":3,"x":1}`: `invalid request: a region change is {"entryTimeToLive":SECONDS}: json: unknown field "x"`,
		`{"entryTimeToLive":3} {}`:    "invalid request: malformed JSON: data after the region change object",
		`[30]`:                        `invalid request: a region change is {"entryTimeToLive":SECONDS}: json: cannot unmarshal array into Go value of type struct { EntryTimeToLive json.RawMessage "json:\"entryTimeToLive\"" }`,
	} {
		_, err := ParseEntryTimeToLive([]byte(body))
		checkErr(t, err, want)
	}
}
