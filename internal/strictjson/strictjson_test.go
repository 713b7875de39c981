package strictjson

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckText(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{`{"s":"Hi"}`, true},
		{`{"s":"\ud83d\ude00 \u00e9 \\u00e9 \" \\"}`, true},
		{`{"s":"Hi\ud800"}`, false},
		{`{"s":"Hi\udc00"}`, false},
		{`{"s":"\ud800\u0041"}`, false},
		{`{"s":"\ud800"}`, false},
		{"{\"s\":\"Hi\xff\"}", false},
		{`{"s":"\u12"}`, false},
	}
	for _, tc := range tests {
		if err := checkText([]byte(tc.in)); (err == nil) != tc.ok {
			t.Errorf("checkText(%s) = %v, want ok %t", tc.in, err, tc.ok)
		}
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		in   string
		want any // nil for an error
	}{
		{`{"a":1.50,"b":[true,null]}`, map[string]any{"a": json.Number("1.50"), "b": []any{true, nil}}},
		{" [1] \n", []any{json.Number("1")}},
		{`"x"`, "x"},
		{`{"a":1} {}`, nil},
		{`{"a":1} x`, nil},
		// d.More answers false before a ']' or a '}': they are trailing
		// data all the same.
		{`{"a":1}]`, nil},
		{`{"a":1}}`, nil},
		{`[1]]`, nil},
		{``, nil},
		{`{"a":}`, nil},
	}
	for _, tc := range tests {
		got, err := Decode([]byte(tc.in))
		if tc.want == nil {
			if err == nil {
				t.Errorf("Decode(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("Decode(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Decode(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestDecodeObject(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{`{"a":1,"b":{"a":2}}`, true},    // canonical: no scan for names
		{`{ "b":{"a":2}, "a":1 }`, true}, // not canonical: scanned, no name twice
		{`{"a":[{"a":1},{"a":2}]}`, true},
		{`{"a":1,"a":1}`, false},
		{`{"a":1, "a":2}`, false},
		{`{"x":{"a":1,"b":2,"a":3}}`, false},
		{`{"x":[{"a":1,"a":1}]}`, false},
		{`{"x":[1,{"b":{"c":1}},2],"x":0}`, false},
		{`{"a":1}]`, false},
		{`[{"a":1}]`, false}, // not an object
		{`"a"`, false},
		{`{"s":"\ud800"}`, false},
		{"{\"s\":\"\xff\"}", false},
		{`{"n":1e400}`, false}, // no canonical form
	}
	for _, tc := range tests {
		if _, err := DecodeObject([]byte(tc.in)); (err == nil) != tc.ok {
			t.Errorf("DecodeObject(%s) = %v, want ok %t", tc.in, err, tc.ok)
		}
	}
}
