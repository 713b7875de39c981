package mailqueue

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCanonicalSorting is RFC 8785 section 3.2.3's example: names sorted by
// UTF-16 code units, where U+1F600 (a surrogate pair) sorts before U+FB33.
func TestCanonicalSorting(t *testing.T) {
	in := `{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`
	v, err := decodeJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got, err := canonicalJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestCanonicalStringsAndNumbers(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{"a\"b\\c\x01\x1f\b\f\n\r\t/<>&\u2028é", `"a\"b\\c\u0001\u001f\b\f\n\r\t/<>&` + "\u2028é\""},
		{json.Number("0"), "0"},
		{json.Number("-0"), "0"},
		{json.Number("123456789012345"), "123456789012345"},
		{json.Number("1234567890123456789"), "1234567890123456800"},
		{json.Number("1e21"), "1e+21"},
		{json.Number("1e-7"), "1e-7"},
		{json.Number("0.000001"), "0.000001"},
		{json.Number("5e-324"), "5e-324"},
		{json.Number("1.0"), "1"},
		{json.Number("-1.5e3"), "-1500"},
		{json.Number("007"), "7"},
		{float64(math.MaxFloat64), "1.7976931348623157e+308"},
		{[]any{true, false, nil}, "[true,false,null]"},
	}
	for _, tc := range tests {
		got, err := canonicalJSON(tc.in)
		if err != nil {
			t.Errorf("%v: %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("%#v: got %s, want %s", tc.in, got, tc.want)
		}
	}
	if _, err := canonicalJSON(math.NaN()); err == nil {
		t.Error("NaN has a canonical form")
	}
}

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
