package jsonscan

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// member is one name and value Object reported.
type member struct{ name, value string }

func members(data []byte) ([]member, bool) {
	var got []member
	ok := Object(data, func(name, value []byte) {
		got = append(got, member{string(name), string(value)})
	})
	return got, ok
}

// check holds Object and String to encoding/json on data: Object accepts
// exactly the valid objects whose member names are plain, with the
// members json.Unmarshal finds, and String gives exactly the text
// json.Unmarshal decodes from a plain string.
func check(t *testing.T, data []byte) {
	t.Helper()
	if got, want := Valid(data), json.Valid(data); got != want {
		t.Fatalf("Valid(%q) = %v, json.Valid %v", data, got, want)
	}
	got, ok := members(data)
	var m map[string]json.RawMessage
	isObject := json.Valid(data) && json.Unmarshal(data, &m) == nil && m != nil
	switch {
	case ok && !isObject:
		t.Fatalf("Object accepted %q, which encoding/json does not read as an object", data)
	case !ok && isObject && !bytes.Contains(data, []byte{'\\'}) && utf8.Valid(data):
		t.Fatalf("Object refused %q, a valid object of UTF-8 without an escape", data)
	case ok:
		last := map[string]string{}
		for _, mb := range got {
			last[mb.name] = mb.value
		}
		if len(last) != len(m) {
			t.Fatalf("Object found %d distinct members in %q, encoding/json %d", len(last), data, len(m))
		}
		for name, v := range m {
			if last[name] != string(v) {
				t.Fatalf("member %q of %q: Object %q, encoding/json %q", name, data, last[name], v)
			}
			checkString(t, v)
		}
	}
}

func checkString(t *testing.T, v []byte) {
	t.Helper()
	text, ok := String(v)
	var s string
	err := json.Unmarshal(v, &s)
	plain := len(v) >= 2 && v[0] == '"' && !bytes.ContainsRune(v, '\\') && utf8.Valid(v)
	switch {
	case ok && (err != nil || s != string(text)):
		t.Fatalf("String(%q) = %q, encoding/json %q (%v)", v, text, s, err)
	case !ok && err == nil && plain:
		t.Fatalf("String refused %q, a plain string", v)
	}
}

func TestObject(t *testing.T) {
	for _, tc := range []struct {
		data string
		want []member
		ok   bool
	}{
		{`{"type":"update","region":"r","key":"k1","value":{"a":[1,2.5,-3e+2,true,false,null,"x\"y"]}}`,
			[]member{{"type", `"update"`}, {"region", `"r"`}, {"key", `"k1"`}, {"value", `{"a":[1,2.5,-3e+2,true,false,null,"x\"y"]}`}}, true},
		{" { } \n", nil, true},
		{`{"a" : 1 , "b":"é"}`, []member{{"a", "1"}, {"b", `"é"`}}, true},
		{`{"a":1,"a":2}`, []member{{"a", "1"}, {"a", "2"}}, true},
		{`{"k\u0065y":1}`, nil, false}, // an escaped name: encoding/json's to read
		{`[1]`, nil, false},
		{`{"a":1}x`, nil, false},
		{`{"a":01}`, nil, false},
		{`{"a":1.}`, nil, false},
		{`{"a":-}`, nil, false},
		{`{"a":tru}`, nil, false},
		{`{"a":"x` + "\x01" + `"}`, nil, false},
		{`{"a":"\x"}`, nil, false},
		{`{"a":"\u12g4"}`, nil, false},
		{`{"a":[1,]}`, nil, false},
		{`{"a":1,}`, nil, false},
		{`{"a" 1}`, nil, false},
		{`{"a":{"b":1}`, nil, false},
		{"", nil, false},
		{" 1 ", nil, false},
		{`"s"`, nil, false},
		{"[" + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + "]", nil, false},
		{`{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, nil, false},
		{`{"a":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`,
			[]member{{"a", strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1)}}, true},
	} {
		got, ok := members([]byte(tc.data))
		if ok != tc.ok || ok && !slices.Equal(got, tc.want) {
			t.Errorf("Object(%.60q) = %q, %v; want %q, %v", tc.data, got, ok, tc.want, tc.ok)
		}
		check(t, []byte(tc.data))
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		value, want string
		ok          bool
	}{
		{`"abc"`, "abc", true},
		{`""`, "", true},
		{`"ü-€"`, "ü-€", true},
		{`"a\nb"`, "", false},   // an escape: encoding/json's to decode
		{"\"\xff\"", "", false}, // not UTF-8: encoding/json makes it U+FFFD
		{`null`, "", false},     // encoding/json leaves the string as it was
		{`12`, "", false},       // not a string
		{`"`, "", false},
	} {
		got, ok := String([]byte(tc.value))
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("String(%q) = %q, %v; want %q, %v", tc.value, got, ok, tc.want, tc.ok)
		}
		checkString(t, []byte(tc.value))
	}
}

// An event is read without allocating.
func TestObjectAllocs(t *testing.T) {
	data := []byte(`{"type":"update","region":"watched","key":"w-17","value":{"writer":"r1","seq":123456,"pad":"xxxxxxxx"}}`)
	var key []byte
	if n := testing.AllocsPerRun(100, func() {
		Object(data, func(name, value []byte) {
			if string(name) == "key" {
				key, _ = String(value)
			}
		})
	}); n != 0 {
		t.Errorf("Object allocates %v times per event, want 0", n)
	}
	if string(key) != "w-17" {
		t.Errorf("key %q", key)
	}
}

func FuzzObject(f *testing.F) {
	for _, s := range []string{
		`{"type":"update","region":"r","key":"k","value":{"a":[1,-2.5e3,true,null,"\u00e9"]},"token":"0:1.2"}`,
		`{"type":"end","cause":"the region was destroyed"}`, `{}`, `{"a":"\\"}`, `{"k\"":1}`, `[]`, `{"a":1e}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check(t, data)
	})
}

func BenchmarkObject(b *testing.B) {
	data := []byte(`{"type":"update","region":"watched","key":"w-17","value":{"writer":"r1","seq":123456,"sent":1764412345678901234,"pad":"` + strings.Repeat("x", 140) + `"}}`)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Object(data, func(name, value []byte) {})
	}
}

func BenchmarkValid(b *testing.B) {
	data := []byte(`{"type":"update","region":"watched","key":"w-17","value":{"writer":"r1","seq":123456,"sent":1764412345678901234,"pad":"` + strings.Repeat("x", 140) + `"}}`)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Valid(data)
	}
}

func BenchmarkValidStdlib(b *testing.B) {
	data := []byte(`{"type":"update","region":"watched","key":"w-17","value":{"writer":"r1","seq":123456,"sent":1764412345678901234,"pad":"` + strings.Repeat("x", 140) + `"}}`)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		json.Valid(data)
	}
}
