package jcs_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/internal/jcs"
	"github.com/alexify/mailer/internal/strictjson"
)

// TestCanonicalSorting is RFC 8785 section 3.2.3's example: names sorted by
// UTF-16 code units, where U+1F600 (a surrogate pair) sorts before U+FB33.
func TestCanonicalSorting(t *testing.T) {
	in := `{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`
	v, err := strictjson.Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got, err := jcs.Marshal(v)
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
		got, err := jcs.Marshal(tc.in)
		if err != nil {
			t.Errorf("%v: %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("%#v: got %s, want %s", tc.in, got, tc.want)
		}
	}
	if _, err := jcs.Marshal(math.NaN()); err == nil {
		t.Error("NaN has a canonical form")
	}
}

func TestHash(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		// The SHA-256 of "{}" and of `{"a":1,"b":[true]}`.
		{map[string]any{}, "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
		{map[string]any{"b": []any{true}, "a": json.Number("1")}, sha256Hex(`{"a":1,"b":[true]}`)},
	} {
		got, err := jcs.Hash(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Hash(%v) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := jcs.Hash(math.Inf(1)); err == nil {
		t.Error("an infinity has a hash")
	}
}

func TestMarshalRefusesOtherTypes(t *testing.T) {
	for _, v := range []any{json.Number("1e400"), json.Number("x"), 1, []string{"a"}, map[string]string{}} {
		if got, err := jcs.Marshal(v); err == nil {
			t.Errorf("Marshal(%#v) = %s, want an error", v, got)
		}
	}
}
