package member

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestFind(t *testing.T) {
	obj := `{"@type":"Order","id":7,"name":"a \"quoted\" \\ name","items":[{"id":1,"tags":["x","}"]}],"nested":{"a":{"b":[1,2,{"c":"]"}]}},"totalPrice":42.5,"ok":true,"none":null,"id":8}`
	for _, tc := range []struct {
		name, want string
		found      bool
	}{
		{"@type", `"Order"`, true},
		{"id", `7`, true}, // the first of two
		{"name", `"a \"quoted\" \\ name"`, true},
		{"items", `[{"id":1,"tags":["x","}"]}]`, true},
		{"nested", `{"a":{"b":[1,2,{"c":"]"}]}}`, true},
		{"totalPrice", `42.5`, true},
		{"ok", `true`, true},
		{"none", `null`, true},
		{"c", ``, false}, // nested members are not top-level ones
		{"missing", ``, false},
		{"Id", ``, false},
	} {
		v, found, sure := Find(obj, tc.name)
		if !sure || found != tc.found || v != tc.want {
			t.Errorf("Find(%q) = %q, found %v, sure %v; want %q, found %v, sure", tc.name, v, found, sure, tc.want, tc.found)
		}
	}
	spaced := " {\n \"a\" : 1 ,\t\"b\" :\r\n \"x\" \n}\n"
	if v, found, sure := Find(spaced, "b"); v != `"x"` || !found || !sure {
		t.Errorf("with white space: %q %v %v", v, found, sure)
	}
	// A name that is not a key's text, though it occurs in the object's.
	if v, found, _ := Find(`{"x":"a","b":1}`, `a","b`); found {
		t.Errorf(`Find of a name spanning two strings found %q`, v)
	}
	if v, found, sure := Find(`{"x":"totalPrice","totalPrice":2}`, "totalPrice"); v != "2" || !found || !sure {
		t.Errorf("a value equal to the name: %q %v %v", v, found, sure)
	}
	if _, found, sure := Find(`{}`, "a"); found || !sure {
		t.Errorf("empty object: found %v sure %v", found, sure)
	}
	// What the scan does not settle it says so, for a full parser to answer.
	for _, obj := range []string{`{"\u0061":1,"a":2}`, `[1]`, `"a"`, ``, `{"a"`, `{"a":"x}`, `{"b":{"a":1}`} {
		if _, _, sure := Find(obj, "a"); sure {
			t.Errorf("Find(%q) says it is sure", obj)
		}
	}
}

// FuzzFind holds Find to gjson's answer over every valid JSON object and
// name where Find is sure, and requires it to be sure for objects whose
// keys have no escapes.
func FuzzFind(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":"x"}`, `{"a":{"b":[1,"]"]},"c":true}`, `{"a\"":1,"a":2}`, `{ "k" : [ ] , "k" : { } }`, `{"a":"\\\\"}`} {
		f.Add(s, "a")
	}
	f.Add(`{"x":"a","b":1}`, `a","b`)
	f.Fuzz(func(t *testing.T, obj, name string) {
		if !json.Valid([]byte(obj)) || name == "" {
			return
		}
		v, found, sure := Find(obj, name)
		r := gjson.Get(obj, gjson.Escape(name))
		isObject := strings.HasPrefix(strings.TrimLeft(obj, " \t\r\n"), "{")
		if !sure {
			if isObject && !strings.Contains(obj, `\`) {
				t.Fatalf("Find(%q, %q) unsure of an object without escapes", obj, name)
			}
			return
		}
		if !isObject {
			t.Fatalf("Find(%q, %q) sure of something not an object", obj, name)
		}
		if found != r.Exists() || (found && v != r.Raw) {
			t.Fatalf("Find(%q, %q) = %q, %v; gjson: %q, %v", obj, name, v, found, r.Raw, r.Exists())
		}
	})
}

var sink string

func BenchmarkFind(b *testing.B) {
	obj := `{"@type":"Order","purchaseOrderNo":123456,"customerId":56,"rev":0,"orderDate":"01/15/2024","totalPrice":466.5,"description":"abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"}`
	b.Run("member", func(b *testing.B) {
		for b.Loop() {
			sink, _, _ = Find(obj, "totalPrice")
		}
	})
	long := `{"@type":"org.example.Order","id":4242,"purchaseOrderNo":5242,"customerId":242,"description":"Order 4242 for customer 242","orderDate":"01/15/2024","deliveryDate":"02/15/2024","contact":"Contact 4242","email":"c4242@example.org","phone":"555-4242","totalPrice":4242.42,"items":[{"itemId":42,"description":"item","quantity":2,"unitPrice":42.5,"totalPrice":85.5}]}`
	b.Run("member, late in a longer object", func(b *testing.B) {
		for b.Loop() {
			sink, _, _ = Find(long, "totalPrice")
		}
	})
	b.Run("member, absent", func(b *testing.B) {
		for b.Loop() {
			sink, _, _ = Find(long, "discount")
		}
	})
	b.Run("gjson", func(b *testing.B) {
		for b.Loop() {
			sink = gjson.Get(obj, gjson.Escape("totalPrice")).Raw
		}
	})
}
