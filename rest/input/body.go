package input

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/kvnode/kvnode/region"
)

// The JSON bodies of writes and of the management API. rest has checked
// that a body is declared as JSON and within the size limit; these decide
// whether it is one the API accepts.

// Entries reads the body of a PUT of keys: one JSON object for one key, a
// JSON array of one object per key for several. Each value is checked and
// compacted as region.NormalizeValue does; a refused one names its key.
//
// A bulk load sends thousands of values in one array, so the common case
// takes one pass: the whole body compacted (which validates it) and
// checked for UTF-8 once, then cut into its elements in place. A body that
// fails either check goes the element-by-element way, whose errors name
// the element at fault.
func Entries(body []byte, keys []string) ([]region.Entry, error) {
	if len(keys) == 1 {
		v, err := region.NormalizeValue(body)
		if err != nil {
			return nil, err
		}
		return []region.Entry{{Key: keys[0], Value: v}}, nil
	}
	check := region.CheckCompacted
	elems, ok := splitCompacted(body, len(keys))
	if !ok {
		var err error
		if elems, err = ParseArray(body, len(keys)); err != nil {
			return nil, err
		}
		check = region.NormalizeValue
	}
	entries := make([]region.Entry, len(keys))
	for i, k := range keys {
		v, err := check(elems[i])
		if err != nil {
			return nil, WithElement(err, keys, i)
		}
		entries[i] = region.Entry{Key: k, Value: v}
	}
	return entries, nil
}

// WithElement names the key whose body element was refused, in the
// multi-key form.
func WithElement(err error, keys []string, i int) error {
	if len(keys) == 1 {
		return err
	}
	return fmt.Errorf("value %d (key %q): %w", i, keys[i], err)
}

// splitCompacted compacts body and cuts it into the elements of its
// top-level array, sharing one buffer; ok is false (and the caller takes
// the slow path) unless body is valid JSON, valid UTF-8, an array, and of
// want elements.
func splitCompacted(body []byte, want int) ([]json.RawMessage, bool) {
	if !utf8.Valid(body) || !json.Valid(body) {
		return nil, false
	}
	b := region.Compact(body)
	if len(b) < 2 || b[0] != '[' {
		return nil, false
	}
	elems := make([]json.RawMessage, 0, want)
	start, d, inString := 1, 0, false
	for i := 1; i < len(b); i++ {
		c := b[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			d++
		case c == '}' || (c == ']' && d > 0):
			d--
		case d == 0 && (c == ',' || c == ']'):
			if i > start {
				elems = append(elems, json.RawMessage(b[start:i:i]))
			}
			start = i + 1
		}
	}
	return elems, len(elems) == want
}

// ParseArray splits the body of a multi-key PUT, a JSON array, into its
// elements, keeping each element's bytes as sent (values are never
// re-serialized), and checks it has want elements, one per key of the path.
func ParseArray(body []byte, want int) ([]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("%w: a multi-key PUT needs a JSON array of %d values, one per key", region.ErrInvalid, want)
	}
	var elems []json.RawMessage
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%w: malformed JSON in element %d: %v", region.ErrInvalid, len(elems), err)
		}
		elems = append(elems, raw)
	}
	if err := endOfJSON(dec, json.Delim(']')); err != nil {
		return nil, err
	}
	if len(elems) != want {
		return nil, fmt.Errorf("%w: the body has %d values for %d keys", region.ErrInvalid, len(elems), want)
	}
	return elems, nil
}

// ParseCASPair reads a CAS body, {"@old":{..},"@new":{..}}: both members
// present, both objects (region.NormalizeValue), nothing else.
func ParseCASPair(raw []byte) (oldV, newV json.RawMessage, err error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf(`%w: a CAS body is {"@old":{...},"@new":{...}}: `+format, append([]any{region.ErrInvalid}, a...)...)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, bad("the body is not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, bad("malformed JSON: %v", err)
		}
		name, _ := tok.(string)
		var member json.RawMessage
		if err := dec.Decode(&member); err != nil {
			return nil, nil, bad("malformed JSON: %v", err)
		}
		var dst *json.RawMessage
		switch name {
		case "@old":
			dst = &oldV
		case "@new":
			dst = &newV
		default:
			return nil, nil, bad("unexpected member %q", name)
		}
		if *dst != nil {
			return nil, nil, bad("member %q appears twice", name)
		}
		if *dst, err = region.NormalizeValue(member); err != nil {
			return nil, nil, fmt.Errorf("CAS member %s: %w", name, err)
		}
	}
	if err := endOfJSON(dec, json.Delim('}')); err != nil {
		return nil, nil, err
	}
	if oldV == nil || newV == nil {
		return nil, nil, bad("@old and @new are both required")
	}
	return oldV, newV, nil
}

// endOfJSON consumes the closing delimiter and checks nothing follows it.
func endOfJSON(dec *json.Decoder, closing json.Delim) error {
	if tok, err := dec.Token(); err != nil || tok != closing {
		return fmt.Errorf("%w: malformed JSON: expected %q", region.ErrInvalid, closing)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: malformed JSON: data after the closing %q", region.ErrInvalid, closing)
	}
	return nil
}

// decodeObject decodes body, one JSON object, into v strictly: unknown
// members are refused rather than ignored, because a client that sends a
// setting we do not honour (a Geode region attribute, say) must learn so,
// and so is anything after the object. shape shows the client what a
// valid body looks like; what names the object in the trailing-data error.
func decodeObject(body []byte, v any, shape, what string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s: %v", region.ErrInvalid, shape, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: malformed JSON: data after the %s object", region.ErrInvalid, what)
	}
	return nil
}

// ParseRegionConfig reads the body of a region creation,
// {"name":"orders","type":"REPLICATE","entryTimeToLive":60}, and validates
// the name, type and default entry time-to-live (seconds, optional). The
// time-to-live may also come in Geode's shape, "expirations":
// [{"type":"ENTRY_TIME_TO_LIVE","timeInSeconds":60,"action":"DESTROY"}]
// ("expiration" accepted too).
func ParseRegionConfig(body []byte) (region.Info, error) {
	var cfg struct {
		Name            string          `json:"name"`
		Type            string          `json:"type"`
		EntryTimeToLive json.RawMessage `json:"entryTimeToLive"`
		Expirations     []expiration    `json:"expirations"`
		Expiration      []expiration    `json:"expiration"`
	}
	if err := decodeObject(body, &cfg, `a region is {"name":"...","type":"REPLICATE"|"PARTITION","entryTimeToLive":SECONDS}`, "region"); err != nil {
		return region.Info{}, err
	}
	if err := region.ValidateName(cfg.Name); err != nil {
		return region.Info{}, err
	}
	kind, err := region.ParseKind(cfg.Type)
	if err != nil {
		return region.Info{}, err
	}
	ttl, err := regionTTL(cfg.EntryTimeToLive, append(cfg.Expirations, cfg.Expiration...))
	if err != nil {
		return region.Info{}, err
	}
	return region.Info{Name: cfg.Name, Kind: kind, EntryTimeToLive: ttl}, nil
}

// ParseIndex reads the body of an index creation on regionName in either
// of two shapes: kvnode's, {"name":..,"expression":"o.customerId",
// "from":"/orders o"}, or Apache Geode's management API's,
// {"name":..,"expression":"customerId","regionPath":"/orders",
// "indexType":"RANGE"}. A Geode body becomes kvnode's with regionPath as
// the FROM clause (a leading "/" added if missing). The definition itself
// is the store's to check, when it compiles it.
//
// kvnode has one kind of index, sorted over a member path, which serves
// both equality and range conditions: Geode's RANGE (FUNCTIONAL), HASH
// and KEY (PRIMARY_KEY) index types are all accepted and become it. The
// type is not kept: the index lists as kvnode's shape.
func ParseIndex(regionName string, body []byte) (region.IndexInfo, error) {
	var def struct {
		Name       string  `json:"name"`
		Expression string  `json:"expression"`
		From       string  `json:"from"`
		RegionPath *string `json:"regionPath"`
		IndexType  *string `json:"indexType"`
	}
	shape := fmt.Sprintf(`an index is {"name":"...","expression":"o.customerId","from":"/%s o"} `+
		`or, as in Geode, {"name":"...","expression":"customerId","regionPath":"/%[1]s","indexType":"RANGE"}`, regionName)
	if err := decodeObject(body, &def, shape, "index"); err != nil {
		return region.IndexInfo{}, err
	}
	info := region.IndexInfo{Name: def.Name, Expression: def.Expression, From: def.From}
	if def.RegionPath == nil && def.IndexType == nil {
		return info, nil
	}
	if def.From != "" {
		return region.IndexInfo{}, fmt.Errorf("%w: an index has \"from\" (kvnode's shape) or \"regionPath\" and \"indexType\" (Geode's), not both", region.ErrInvalid)
	}
	if def.IndexType != nil {
		if err := checkIndexType(*def.IndexType); err != nil {
			return region.IndexInfo{}, err
		}
	}
	if def.RegionPath == nil || strings.TrimSpace(*def.RegionPath) == "" {
		return region.IndexInfo{}, fmt.Errorf("%w: a Geode index body needs \"regionPath\", e.g. \"/%s\"", region.ErrInvalid, regionName)
	}
	info.From = strings.TrimSpace(*def.RegionPath)
	if !strings.HasPrefix(info.From, "/") {
		info.From = "/" + info.From
	}
	return info, nil
}

// checkIndexType accepts Geode's index types, by their REST names or
// their Java enum names, in any letter case.
func checkIndexType(t string) error {
	switch strings.ToUpper(strings.TrimSpace(t)) {
	case "RANGE", "FUNCTIONAL", "HASH", "HASH_DEPRECATED", "KEY", "PRIMARY_KEY":
		return nil
	}
	return fmt.Errorf("%w: indexType %q is not RANGE, HASH or KEY", region.ErrInvalid, t)
}

// FunctionSpec is a function deployment as a client sends it: everything
// but the id, which is the path's. Package function checks the source when
// it is deployed.
type FunctionSpec struct {
	Source      string
	Permission  string
	DataAware   bool
	HasResult   bool
	Description string
	Timeout     string
}

// ParseFunctionSpec reads the body of PUT /management/v1/functions/{id}:
// "source" is required, "hasResult" defaults to true.
func ParseFunctionSpec(body []byte) (FunctionSpec, error) {
	var d struct {
		Source      *string `json:"source"`
		Permission  string  `json:"permission"`
		DataAware   bool    `json:"dataAware"`
		HasResult   *bool   `json:"hasResult"`
		Description string  `json:"description"`
		Timeout     string  `json:"timeout"`
	}
	if err := decodeObject(body, &d, `a function is {"source":"function execute(ctx) {...}","permission":"DATA:WRITE","dataAware":false,"hasResult":true}`, "function"); err != nil {
		return FunctionSpec{}, err
	}
	if d.Source == nil {
		return FunctionSpec{}, fmt.Errorf("%w: \"source\" is required", region.ErrInvalid)
	}
	hasResult := true
	if d.HasResult != nil {
		hasResult = *d.HasResult
	}
	return FunctionSpec{
		Source: *d.Source, Permission: d.Permission, DataAware: d.DataAware, HasResult: hasResult, Description: d.Description, Timeout: d.Timeout,
	}, nil
}
