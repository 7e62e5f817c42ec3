// Package wire reads the framing of the API's JSON answers for package
// client: a streamed listing's opening {"name":[ and its end ]}, and an
// error answer's cause. It is the standard library only.
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// OpenList reads `{"<name>":[` of a streamed listing.
func OpenList(dec *json.Decoder, name string) error {
	for i, want := range []any{json.Delim('{'), name, json.Delim('[')} {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if tok != want {
			return fmt.Errorf("token %d is %v, want %v", i+1, tok, want)
		}
	}
	return nil
}

// CloseList reads the `]}` that ends a listing: a stream cut short lacks it.
func CloseList(dec *json.Decoder) error {
	for _, want := range []json.Delim{']', '}'} {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if tok != want {
			return fmt.Errorf("listing ends with %v, want %v", tok, want)
		}
	}
	return nil
}

// Cause is the cause of an error answer, {"cause": "..."}; "" for any
// other body (a conflict's body is the current value, which may have a
// "cause" member of its own among others).
func Cause(body []byte) string {
	var doc struct {
		Cause *string `json:"cause"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil || doc.Cause == nil {
		return ""
	}
	return *doc.Cause
}
